package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// browserStepTimeout bounds each step a test asks of the browser (a
// click, a wait for an element): generous, for a loaded 2-core machine.
const browserStepTimeout = 45 * time.Second

// artifactsEnv names the directory where the console tests leave their
// screenshots; by default <temp dir>/singlecloud-artifacts.
const artifactsEnv = "SINGLECLOUD_ARTIFACTS"

// tab is one headless Chromium tab of a test, with its downloads going to
// downloads and what its pages write to the console kept for the log.
type tab struct {
	t         *testing.T
	ctx       context.Context
	downloads string
	mu        sync.Mutex
	console   []string
}

// newTab starts Debian's Chromium headless (with CI=true a missing one
// fails the test) and opens a tab; both end with the test.
func newTab(t *testing.T) *tab {
	t.Helper()
	testbed.Require(t, testbed.NeedChromium)
	path, _ := testbed.Chromium()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in CI: Chromium's sandbox refuses to run as root
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	tb := &tab{t: t, ctx: ctx, downloads: t.TempDir()}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		if t.Failed() {
			tb.mu.Lock()
			t.Logf("the browser's console:\n%s", strings.Join(tb.console, "\n"))
			tb.mu.Unlock()
		}
	})
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: tb.downloads,
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// The tab is attached before the console is followed: a subscription
	// racing the tab's first action stalls it.
	if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, m.String())
			tb.mu.Unlock()
		}
	}()
	return tb
}

// do runs steps, each within browserStepTimeout, and fails the test on the
// first that fails, saying which.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	for i, s := range steps {
		ctx, cancel := context.WithTimeout(tb.ctx, browserStepTimeout)
		err := chromedp.Do(ctx, s)
		cancel()
		if err != nil {
			tb.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
			tb.t.Fatalf("browser: %s (step %d): %v", what, i+1, err)
		}
	}
}

// text is the text of the first element sel (a CSS selector) matches.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return runIn(tb, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	return runIn(tb, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

// waitJS waits until a JavaScript expression is truthy, for at most d.
func (tb *tab) waitJS(what, expr string, d time.Duration) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		tb.shot("failed-wait")
		tb.t.Fatalf("browser: %s did not happen within %s: %v", what, d, err)
	}
}

func runIn[T any](tb *tab, what string, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browserStepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// shot saves a screenshot of the whole page as <artifacts>/<test>/<name>.png
// and logs where.
func (tb *tab) shot(name string) {
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "singlecloud-artifacts")
	}
	dir = filepath.Join(dir, strings.ReplaceAll(tb.t.Name(), "/", "-"))
	ctx, cancel := context.WithTimeout(tb.ctx, browserStepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	file := filepath.Join(dir, name+".png")
	if err == nil {
		err = os.WriteFile(file, png, 0o644)
	}
	if err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return
	}
	tb.t.Logf("screenshot: %s", file)
}

// login opens the console at base and logs in through its form.
func (tb *tab) login(base, user, password string) {
	tb.t.Helper()
	tb.do("log in as "+user,
		chromedp.Navigate(base+"/#/login"),
		chromedp.WaitVisible(chromedp.CSS("#login-user")),
		clearInput("#login-user"),
		chromedp.SendKeys(chromedp.CSS("#login-user"), user),
		chromedp.SendKeys(chromedp.CSS("#login-password"), password),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#clusters")),
	)
	if got := tb.text("#whoami"); got != user {
		tb.t.Fatalf("logged in as %q, the header says %q", user, got)
	}
}

// waitFile waits until the browser has finished downloading name.
func (tb *tab) waitFile(name string, d time.Duration) []byte {
	tb.t.Helper()
	path := filepath.Join(tb.downloads, name)
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 {
			if _, partial := os.Stat(path + ".crdownload"); partial != nil {
				return b
			}
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(tb.downloads)
			tb.t.Fatalf("download %s did not arrive within %s (the directory has %v)", name, d, entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string { return fmt.Sprintf("%q", s) }

// clearInput empties the input sel (a CSS selector) as selecting its text
// and deleting it would, so that keys sent next replace its value.
func clearInput(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
			const e = document.querySelector(%s);
			if (!e) return false;
			e.value = '';
			e.dispatchEvent(new Event('input', { bubbles: true }));
			return true;
		})()`, jsString(sel)))(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("no element %s to clear", sel)
		}
		return err
	})
}
