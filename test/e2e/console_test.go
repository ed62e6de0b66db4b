package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestConsoleAsAPersonWould drives the web console in headless Chromium as
// a person would: a wrong password, then the login; an invalid create form
// whose every error the API names appears beside its field; the same form
// corrected (nodes typed into the table, the SSH key uploaded from a file)
// creates a cluster on three testbed hosts, whose progress moves live in
// the list and reaches 100 % on the cluster's page with its steps, log and
// nodes; the kubeconfig downloaded; a user made and granted the cluster,
// who then sees it without any button that writes; and the cluster
// deleted after a typed confirmation. Each page is saved as a screenshot.
func TestConsoleAsAPersonWould(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker, testbed.NeedChromium)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	tb := newTab(t)

	// The page itself: served with a policy that allows only its own
	// scripts, and without a token.
	resp, err := http.Get(inst.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != http.StatusOK || !strings.Contains(csp, "script-src 'self'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET /: %s, CSP %q", resp.Status, csp)
	}

	// A wrong password is refused with the API's message.
	tb.do("wrong password",
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#login-password")),
		chromedp.SendKeys(chromedp.CSS("#login-password"), "not-the-password"),
		chromedp.Click(chromedp.CSS("#login-submit")),
	)
	tb.waitJS("the login error", `document.querySelector('#login-error').textContent.length > 0`, 20*time.Second)
	if msg := tb.text("#login-error"); !strings.Contains(strings.ToLower(msg), "password") {
		t.Errorf("wrong password: the page says %q", msg)
	}
	tb.shot("01-login-refused")
	tb.login(inst.URL, "admin", inst.password)
	tb.shot("02-list-empty")

	// The page's own SHA-1, used where the browser has no SubtleCrypto
	// (plain http to a LAN address), agrees with Go's.
	for _, s := range []string{"", "abc", "ann-secret", "pässwörd ✓", strings.Repeat("x", 200)} {
		got := runIn(tb, "sha1.js", chromedp.Evaluate[string](fmt.Sprintf(`import('/ui/sha1.js').then(m =>
			Array.from(m.sha1(new TextEncoder().encode(%s)), b => b.toString(16).padStart(2, '0')).join(''))`, jsString(s)),
			chromedp.EvalAwaitPromise))
		if got != digest(s) {
			t.Errorf("sha1.js of %q = %s, want %s", s, got, digest(s))
		}
	}

	// An invalid form: each problem beside its field.
	tb.do("fill an invalid form",
		chromedp.Click(chromedp.CSS("#create-cluster")),
		chromedp.WaitVisible(chromedp.CSS("#cluster-form")),
		chromedp.SendKeys(chromedp.CSS("#f-name"), "Bad Name"),
		chromedp.SendKeys(chromedp.CSS(`[data-field="nodes[0].name"]`), "n1"),
		chromedp.SendKeys(chromedp.CSS(`[data-field="nodes[0].address"]`), "10.0.0.300"),
		chromedp.SendKeys(chromedp.CSS(`[data-field="nodes[0].taints"]`), "dedicated=e2e:Sometimes"),
		chromedp.Click(chromedp.CSS("#submit-cluster")),
	)
	tb.waitJS("the field errors", `document.querySelectorAll('.field-error[data-for]').length >= 4`, 20*time.Second)
	for _, field := range []string{"name", "sshKey", "nodes[0].address", "nodes[0].taints[0].effect"} {
		beside := eval[bool](tb, fmt.Sprintf(`(() => {
			const e = document.querySelector('.field-error[data-for=%q]');
			return !!e && !!e.parentElement.querySelector('[data-field]') &&
				%q.startsWith(e.parentElement.querySelector('[data-field]').dataset.field);
		})()`, field, field))
		if !beside {
			t.Errorf("no error beside field %s; the errors shown: %s", field,
				eval[string](tb, `Array.from(document.querySelectorAll('.field-error')).map(e => e.dataset.for + ': ' + e.textContent).join('\n')`))
		}
	}
	tb.shot("03-create-invalid")
	if status, body := inst.admin(t).do(http.MethodGet, apiPath+"/clusters", nil); status != http.StatusOK || len(body["data"].([]any)) != 0 {
		t.Fatalf("the invalid form made a cluster: %d %v", status, body)
	}

	// Corrected: three nodes typed in, the key uploaded from a file, the
	// testbed's cgroups in the advanced settings.
	keyFile := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(keyFile, hosts[0].ClientKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	advanced := map[string]any{}
	var advNodes []map[string]any
	for _, h := range hosts {
		advNodes = append(advNodes, map[string]any{"name": h.Name, "kubelet": map[string]string{"cgroupRoot": h.CgroupRoot}})
	}
	advanced["nodes"] = advNodes
	advJSON, _ := json.Marshal(advanced)
	steps := []chromedp.Action[chromedp.Void]{
		clearInput("#f-name"),
		chromedp.SendKeys(chromedp.CSS("#f-name"), "lab"),
		clearInput("#f-singleCloudAddress"),
		chromedp.SendKeys(chromedp.CSS("#f-singleCloudAddress"), hosts[0].Gateway+":8080"),
		chromedp.SetUploadFiles(chromedp.CSS("#f-sshKeyFile"), []string{keyFile}),
		clearInput(`[data-field="nodes[0].name"]`),
		chromedp.SendKeys(chromedp.CSS(`[data-field="nodes[0].name"]`), hosts[0].Name),
		clearInput(`[data-field="nodes[0].address"]`),
		chromedp.SendKeys(chromedp.CSS(`[data-field="nodes[0].address"]`), hosts[0].Address),
		clearInput(`[data-field="nodes[0].taints"]`),
		chromedp.SendKeys(chromedp.CSS(`[data-field="nodes[0].taints"]`), " "),
	}
	for i, h := range hosts[1:] {
		row := fmt.Sprintf("nodes[%d]", i+1)
		steps = append(steps,
			chromedp.Click(chromedp.CSS("#add-node")),
			chromedp.SendKeys(chromedp.CSS(`[data-field="`+row+`.name"]`), h.Name),
			chromedp.SendKeys(chromedp.CSS(`[data-field="`+row+`.address"]`), h.Address),
			chromedp.Click(chromedp.CSS(`[data-field="`+row+`.roles"] input[value="etcd"]`)),
			chromedp.SendKeys(chromedp.CSS(`[data-field="`+row+`.labels"]`), "zke.test/worker="+h.Name),
			chromedp.SendKeys(chromedp.CSS(`[data-field="`+row+`.taints"]`), "zke.test/dedicated=e2e:NoSchedule"),
		)
	}
	steps = append(steps,
		chromedp.Click(chromedp.CSS("#advanced summary")),
		chromedp.SendKeys(chromedp.CSS("#f-advanced"), string(advJSON)),
	)
	tb.do("correct the form", steps...)
	tb.waitJS("the uploaded key in the form", `document.querySelector('#f-sshKey').value.includes('PRIVATE KEY')`, 10*time.Second)
	tb.shot("04-create-filled")
	tb.do("submit the form", chromedp.Click(chromedp.CSS("#submit-cluster")), chromedp.WaitVisible(chromedp.CSS("#op-progress")))
	start := time.Now()

	// The list moves by itself: the page is not reloaded (a reload would
	// drop the marker), the row's progress changes on the server's events.
	tb.do("open the list", chromedp.Navigate(inst.URL+"/#/clusters"), chromedp.WaitVisible(chromedp.CSS(`#clusters tr[data-cluster="lab"]`)))
	eval[bool](tb, `(window.__noReload = true, window.__p0 = document.querySelector('tr[data-cluster="lab"] .progress')?.dataset.percent ?? '', true)`)
	tb.waitJS("the list's progress moving live", `(() => {
		const p = document.querySelector('tr[data-cluster="lab"] .progress');
		return window.__noReload && !!p && p.dataset.percent !== window.__p0;
	})()`, 5*time.Minute)
	tb.shot("05-list-installing")

	// The cluster's page: the bar reaches 100 % live, with the steps, the
	// log and then the live nodes.
	tb.do("open the cluster", chromedp.Click(chromedp.CSS(`tr[data-cluster="lab"] a.name`)), chromedp.WaitVisible(chromedp.CSS("#zkelog")))
	eval[bool](tb, `(window.__noReload = true)`)
	tb.waitJS("the log following", `document.querySelector('#zkelog').childElementCount > 0`, time.Minute)
	tb.shot("06-cluster-installing")
	// The buttons are the server's actions for the state: an install
	// may be cancelled or deleted, not retried or edited.
	tb.waitJS("the installing cluster's actions", `!document.querySelector('#action-cancel').disabled &&
		document.querySelector('#action-retry').disabled && !document.querySelector('#action-delete').disabled &&
		!document.querySelector('#action-edit')`, 30*time.Second)
	tb.waitJS("the bar at 100 % and the cluster Running", `window.__noReload &&
		document.querySelector('#op-progress .progress')?.dataset.percent === '100' &&
		document.querySelector('#summary [data-status]')?.dataset.status === 'Running'`, 10*time.Minute)
	t.Logf("the console showed the create at 100 %% after %s", time.Since(start).Round(time.Second))
	// The nodes with a kubelet: the two workers.
	tb.waitJS("the live nodes", `document.querySelectorAll('#node-table tr[data-node]').length === 2`, time.Minute)
	if n := eval[int](tb, `document.querySelectorAll('#steps li').length`); n < 8 {
		t.Errorf("the step list has %d steps, want every step of the create", n)
	}
	if log := tb.text("#zkelog"); !strings.Contains(log, "kubeconfig") || !strings.Contains(log, "cluster is Running") {
		t.Errorf("the live log lacks the last step or the result:\n%s", lastBytes(log, 2000))
	}
	tb.shot("07-cluster-running")
	tb.waitJS("the running cluster's actions", `document.querySelector('#action-cancel').disabled &&
		document.querySelector('#action-retry').disabled && !document.querySelector('#action-delete').disabled &&
		!!document.querySelector('#action-edit') && !!document.querySelector('#action-rotate') && !document.querySelector('#action-revert')`, 30*time.Second)

	// A snapshot taken from the page: it appears, and its restore drill's
	// verdict arrives by the events websocket; a restore is offered.
	tb.do("take a snapshot", chromedp.WaitEnabled(chromedp.CSS("#take-snapshot")), chromedp.Click(chromedp.CSS("#take-snapshot")))
	tb.waitJS("the snapshot verified live", `window.__noReload &&
		!!document.querySelector('#snapshot-table tr[data-trigger="manual"][data-verification="verified"]')`, 4*time.Minute)
	if ok := eval[bool](tb, `!document.querySelector('#snapshot-table tr[data-trigger="manual"] .snapshot-restore').disabled`); !ok {
		t.Error("a running cluster's snapshot offers no restore")
	}
	tb.shot("07a-snapshots")

	// The kubeconfig, downloaded with the token in a header.
	tb.do("download the kubeconfig", chromedp.Click(chromedp.CSS("#action-kubeconfig")))
	if kc := string(tb.waitFile("lab.kubeconfig", 30*time.Second)); !strings.Contains(kc, "certificate-authority-data") || !strings.Contains(kc, "current-context") {
		t.Errorf("the downloaded kubeconfig:\n%.300s", kc)
	}

	// Edited in the form and saved unchanged: the cluster goes back as it
	// was read (nothing the form does not show is lost) and its update
	// runs to the end.
	tb.do("edit and save",
		chromedp.Click(chromedp.CSS("#action-edit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-node-row="2"]`)),
		chromedp.WaitEnabled(chromedp.CSS("#submit-cluster")),
		chromedp.Click(chromedp.CSS("#submit-cluster")),
		chromedp.WaitVisible(chromedp.CSS("#op-progress")),
	)
	tb.waitJS("the update Running", `document.querySelector('#op-title strong')?.textContent === 'update' &&
		document.querySelector('#op-progress .progress')?.dataset.percent === '100' &&
		document.querySelector('#summary [data-status]')?.dataset.status === 'Running'`, 5*time.Minute)
	tb.shot("07b-cluster-updated")

	// A user granted the cluster; a grant to a cluster that does not
	// exist is refused beside the grants field.
	tb.do("an invalid user",
		chromedp.Click(chromedp.CSS("#nav-users")),
		chromedp.WaitVisible(chromedp.CSS("#user-form")),
		chromedp.SendKeys(chromedp.CSS("#user-name"), "ann"),
		chromedp.SendKeys(chromedp.CSS("#user-password"), "ann-secret"),
		chromedp.SendKeys(chromedp.CSS("#user-password2"), "ann-secret"),
		chromedp.SendKeys(chromedp.CSS("#user-grants"), "nosuch/*"),
		chromedp.Click(chromedp.CSS("#create-user")),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-for="projects[0].cluster"]`)),
	)
	tb.do("create the user",
		clearInput("#user-grants"),
		chromedp.SendKeys(chromedp.CSS("#user-grants"), "lab/*"),
		chromedp.Click(chromedp.CSS("#create-user")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-user="ann"]`)),
	)
	tb.shot("08-users")

	// ann sees the cluster, live, and nothing that writes.
	tb.do("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-user")))
	tb.login(inst.URL, "ann", "ann-secret")
	tb.do("ann's list", chromedp.WaitVisible(chromedp.CSS(`tr[data-cluster="lab"]`)))
	tb.shot("09-list-read-only")
	tb.do("ann's cluster page", chromedp.Click(chromedp.CSS(`tr[data-cluster="lab"] a.name`)),
		chromedp.WaitVisible(chromedp.CSS(`#summary [data-status="Running"]`)))
	tb.waitJS("ann's live nodes", `document.querySelectorAll('#node-table tr[data-node]').length === 2`, time.Minute)
	tb.shot("10-cluster-read-only")
	if writes := eval[string](tb, `Array.from(document.querySelectorAll(
		'#create-cluster, #import-cluster, #nav-users, [id^="action-"], #zkelog, button.danger, .grant-save')).map(e => e.id || e.className).join(',')`); writes != "" {
		t.Errorf("ann's pages show what she may not do: %s", writes)
	}
	for _, frag := range []string{"#/create", "#/users"} {
		tb.do("ann opens "+frag, chromedp.Navigate(inst.URL+"/"+frag), chromedp.WaitVisible(chromedp.CSS("main p")))
		if s := tb.text("main"); !strings.Contains(s, "Only the admin") {
			t.Errorf("ann at %s sees: %.200s", frag, s)
		}
	}

	// The admin deletes it, after typing its name.
	tb.do("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-user")))
	tb.login(inst.URL, "admin", inst.password)
	tb.do("delete with confirmation",
		chromedp.Click(chromedp.CSS(`tr[data-cluster="lab"] a.name`)),
		chromedp.WaitVisible(chromedp.CSS("#action-delete")),
		chromedp.Click(chromedp.CSS("#action-delete")),
		chromedp.WaitVisible(chromedp.CSS("#delete-dialog")),
	)
	if enabled := eval[bool](tb, `!document.querySelector('#confirm-delete').disabled`); enabled {
		t.Error("the delete button is enabled before the name is typed")
	}
	tb.do("confirm", chromedp.SendKeys(chromedp.CSS("#confirm-name"), "lab"), chromedp.Click(chromedp.CSS("#confirm-delete")),
		chromedp.WaitVisible(chromedp.CSS("#clusters")))
	tb.shot("11-deleting")
	tb.waitJS("the deleted cluster leaving the list", `!document.querySelector('tr[data-cluster="lab"]')`, 5*time.Minute)
}
