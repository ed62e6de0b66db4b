package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is the live bar of `cluster logs -f` on a terminal: percent,
// step k/N and its name, the node, and the server's ETA. Log lines are
// printed above it (line clears the bar, prints, and draws it again).
type progress struct {
	w    io.Writer
	bar  *progressbar.ProgressBar
	done bool
	// eta is the server's estimate of the seconds left, as of etaAt.
	eta   *int
	etaAt time.Time
	desc  string
	now   func() time.Time
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, now: time.Now, bar: progressbar.NewOptions(100,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetRenderBlankState(false),
	)}
}

// update moves the bar to a progress frame.
func (p *progress) update(f frame) {
	if p.done {
		return
	}
	if f.ETA != nil {
		p.eta, p.etaAt = f.ETA, p.now()
	}
	desc := fmt.Sprintf("step %d/%d %s", f.Index, f.Total, f.Step)
	if f.Node != "" {
		desc += " on " + f.Node
	}
	if f.Skipped {
		desc += " (verified, skipped)"
	}
	p.desc = desc
	p.bar.Describe(printable(p.description()))
	_ = p.bar.Set(min(max(f.Percent, 0), 100))
	if f.Percent >= 100 {
		p.finish()
	}
}

// description is the step, node and what is left of the ETA.
func (p *progress) description() string {
	if p.eta == nil {
		return p.desc
	}
	left := time.Duration(*p.eta)*time.Second - p.now().Sub(p.etaAt)
	if left < time.Second {
		return p.desc + ", ETA soon"
	}
	return p.desc + ", ETA " + left.Round(time.Second).String()
}

// line prints a log line above the bar.
func (p *progress) line(s string) {
	if p.done || !p.bar.IsStarted() {
		fmt.Fprintln(p.w, s)
		return
	}
	_ = p.bar.Clear()
	fmt.Fprintln(p.w, s)
	_ = p.bar.RenderBlank()
}

// finish leaves the bar as it is (100 % after a success) on its own line.
func (p *progress) finish() {
	if p.done {
		return
	}
	p.done = true
	if p.bar.IsStarted() {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}
