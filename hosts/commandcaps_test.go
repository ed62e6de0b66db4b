package hosts

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

func TestHostOutputShare(t *testing.T) {
	for _, tc := range []struct{ hosts, want int }{
		{0, maxOutputBytes}, {1, maxOutputBytes}, {8, maxOutputBytes},
		{20, maxRecordOutputBytes / 40}, {100, maxRecordOutputBytes / 200},
	} {
		if got := hostOutputShare(tc.hosts); got != tc.want || got*2*max(tc.hosts, 1) > maxRecordOutputBytes {
			t.Errorf("hostOutputShare(%d) = %d, want %d", tc.hosts, got, tc.want)
		}
	}
}

// capResult keeps stdout's head and stderr's tail, on character
// boundaries, and says so in the output when it cut.
func TestCapResult(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		in                     CommandResult
		share                  int
		wantStdout, wantStderr string
		wantTruncated          bool
	}{
		{"fits", CommandResult{Stdout: "abc", Stderr: "de"}, 3, "abc", "de", false},
		{"stdout head", CommandResult{Stdout: "abcdef"}, 4, "abcd\n" + truncatedMarker("first", "stdout", 4) + "\n", "", true},
		{"stderr tail", CommandResult{Stderr: "abcdef"}, 4, "", truncatedMarker("last", "stderr", 4) + "\ncdef", true},
		{"no cut inside a character", CommandResult{Stdout: "aéé", Stderr: "ééa"}, 4, "aé\n" + truncatedMarker("first", "stdout", 4) + "\n", truncatedMarker("last", "stderr", 4) + "\néa", true},
		{"cut by the transport", CommandResult{Stdout: strings.Repeat("x", maxOutputBytes), Truncated: true}, maxOutputBytes,
			strings.Repeat("x", maxOutputBytes) + "\n" + truncatedMarker("first", "stdout", maxOutputBytes) + "\n", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capResult(tc.in, tc.share)
			if got.Stdout != tc.wantStdout || got.Stderr != tc.wantStderr || got.Truncated != tc.wantTruncated {
				t.Errorf("capResult = %q %q %v; want %q %q %v", got.Stdout, got.Stderr, got.Truncated, tc.wantStdout, tc.wantStderr, tc.wantTruncated)
			}
		})
	}
	if m := truncatedMarker("first", "stdout", 25<<10); !strings.Contains(m, "first 25 KiB of each host's stdout") || !strings.Contains(m, "1 MiB per command") {
		t.Errorf("marker %q does not say what is kept", m)
	}
}

// A command on 20 hosts, each printing about 100 KB to each stream over
// real SSH, is stored with each host's share of the record's 1 MiB, cut
// on character boundaries, with the marker and truncated set.
func TestCommandOutputCappedPerRecord(t *testing.T) {
	d := startTestSSHD(t)
	store := storagetest.Open(t)
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.cancel()
		m.cmdWG.Wait()
	})
	host, portText, _ := net.SplitHostPort(d.addr)
	port, _ := strconv.Atoi(portText)
	const hosts = 20
	for i := range hosts {
		spec := model.HostSpec{Name: fmt.Sprintf("h%02d", i), Address: host, Port: port, User: "root", SSHKey: string(d.clientKey), Labels: map[string]string{"group": "big"}}
		if _, err := m.Create(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	script := `printf x; yes é | head -c 99999; yes é | head -c 99999 >&2; printf x >&2`
	rec, err := m.RunCommand(context.Background(), "admin", "", "group=big", CommandRequest{Command: []string{"sh", "-c", script}, TimeoutSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	rec = finished(t, m, rec.ID)
	share := hostOutputShare(hosts)
	outMarker, errMarker := "\n"+truncatedMarker("first", "stdout", share)+"\n", truncatedMarker("last", "stderr", share)+"\n"
	if !rec.Truncated || len(rec.Results) != hosts {
		t.Fatalf("record truncated %v with %d results, want truncated with %d", rec.Truncated, len(rec.Results), hosts)
	}
	for _, r := range rec.Results {
		out, okOut := strings.CutSuffix(r.Stdout, outMarker)
		errOut, okErr := strings.CutPrefix(r.Stderr, errMarker)
		if r.Error != "" || !r.Truncated || !okOut || !okErr {
			t.Fatalf("%s: error %q, truncated %v, markers %v %v; stdout ends %q", r.Host, r.Error, r.Truncated, okOut, okErr, r.Stdout[max(0, len(r.Stdout)-200):])
		}
		if len(out) > share || len(out) < share-utf8.UTFMax || !strings.HasPrefix(out, "xé\n") || !utf8.ValidString(out) {
			t.Errorf("%s: %d bytes of stdout kept (share %d), valid UTF-8 %v", r.Host, len(out), share, utf8.ValidString(out))
		}
		if len(errOut) > share || len(errOut) < share-utf8.UTFMax || !strings.HasSuffix(errOut, "é\nx") || !utf8.ValidString(errOut) {
			t.Errorf("%s: %d bytes of stderr kept (share %d), valid UTF-8 %v", r.Host, len(errOut), share, utf8.ValidString(errOut))
		}
	}
	// As stored, "é\n" is 4 bytes of JSON for 3 of output: the record
	// stays within its cap but for escaping.
	raw, err := store.Get(storage.BucketHostCommands, rec.ID)
	if err != nil || len(raw) > maxRecordOutputBytes*4/3+16<<10 {
		t.Errorf("stored record: %d bytes, %v; want about %d at most", len(raw), err, maxRecordOutputBytes*4/3)
	}
}

// Records beyond the count or the total size are dropped oldest first,
// except the one being written and those still running.
func TestPruneCommands(t *testing.T) {
	for _, tc := range []struct {
		name               string
		maxCount, maxBytes int
		want               string
	}{
		{"within both", 10, 10000, "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9"},
		{"over the total", 10, 5000, "r1 r6 r7 r8 r9"},
		{"over the count", 3, 1 << 20, "r1 r8 r9"},
		{"only the kept are left", 0, 0, "r1 r9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := storagetest.Open(t)
			err := store.Update(func(tx storage.Tx) error {
				for i := range 10 {
					if err := tx.Put(storage.BucketHostCommands, fmt.Sprintf("r%d", i), make([]byte, 1000)); err != nil {
						return err
					}
				}
				return pruneCommands(tx, "r9", func(id string) bool { return id == "r1" }, tc.maxCount, tc.maxBytes)
			})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := store.List(storage.BucketHostCommands)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range rows {
				got = append(got, kv.Key)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("kept %v, want %s", got, tc.want)
			}
		})
	}
}

// A running command's record is the oldest while more records than the
// store keeps are written: it is never dropped, its follower sees it
// through, and its finished record is then stored.
func TestRunningRecordNeverDropped(t *testing.T) {
	exec := newScripted("h1")
	m := newStreamManager(t, exec, "h1")
	rec, err := m.RunCommand(context.Background(), "admin", "h1", "", CommandRequest{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	_, ch, stop, err := m.FollowCommand(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	start := time.Now().Add(time.Hour)
	for i := range keptCommands + 5 {
		later := CommandRecord{ID: newCommandID(start.Add(time.Duration(i) * time.Second)), State: "Finished", Results: []CommandResult{{Host: "h1", Stdout: "old"}}}
		if err := m.saveCommand(later); err != nil {
			t.Fatal(err)
		}
	}
	list, err := m.Commands()
	if err != nil || len(list) != keptCommands || list[len(list)-1].ID != rec.ID || list[len(list)-1].State != "Running" {
		t.Fatalf("%d records (%v), the oldest %v; want %d with the running one", len(list), err, list[len(list)-1].ID, keptCommands)
	}
	exec.do(t, step{host: "h1", data: "done\n"})
	exec.do(t, step{host: "h1", end: true})
	got := drain(t, ch)
	if len(got) != 2 || got[0].Data != "done\n" || !got[1].Done {
		t.Errorf("the follower got %+v, want the output and the done marker", got)
	}
	if r := finished(t, m, rec.ID); r.Results[0].Stdout != "done\n" {
		t.Errorf("finished record %+v", r)
	}
	if list, _ := m.Commands(); len(list) != keptCommands {
		t.Errorf("%d records once it finished, want %d", len(list), keptCommands)
	}
}
