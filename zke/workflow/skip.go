package workflow

import "context"

// SkippedMessage is the message of the progress frame and log line of a
// step that a resumed run skipped.
const SkippedMessage = "skipped (verified)"

// verifiedDone decides whether a resumed run may skip st: an earlier run
// recorded a fingerprint for it, the step's inputs still hash to it, and
// its Verify passes. It returns the fingerprint to checkpoint again when
// the step is skipped. A failed Verify is logged as a warning and the
// step runs; an error is returned only when ctx ended.
//
// A step may be skipped even when an earlier step of the same run ran
// (was not skipped): its fingerprint covers its own inputs, so a change
// made by the earlier step to something it acts on shows as a changed
// fingerprint, and its Verify checks its own effect on the hosts as they
// are now. It is up to each step to fingerprint everything whose change
// would make it act differently, and to rebuild in Verify what later
// steps take from its Run; a step that cannot do either has no
// Fingerprint or no Verify, and always runs.
func verifiedDone(ctx context.Context, st Step, r *Reporter, opts RunOptions) (fingerprint string, skip bool, err error) {
	recorded, ok := opts.Done[st.Name]
	if !ok || recorded == "" || st.Fingerprint == nil || st.Verify == nil {
		return "", false, nil
	}
	cur, err := st.Fingerprint()
	if err != nil {
		r.Warnf("", "an earlier run finished this step, but its inputs cannot be fingerprinted (%v): running it again", err)
		return "", false, nil
	}
	if cur != recorded {
		r.Logf("", "an earlier run finished this step with other inputs: running it again")
		return "", false, nil
	}
	vctx, cancel := context.WithTimeout(ctx, opts.VerifyTimeout)
	defer cancel()
	if err := st.Verify(vctx, r); err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		r.Warnf(nodeOf(err), "an earlier run finished this step, but it no longer holds (%v): running it again", err)
		return "", false, nil
	}
	return cur, true, nil
}

// fingerprintAfter is the fingerprint of st to checkpoint once it ran:
// "" when it has none or it cannot be computed (logged; the next resume
// then runs the step again).
func fingerprintAfter(st Step, r *Reporter) string {
	if st.Fingerprint == nil {
		return ""
	}
	fp, err := st.Fingerprint()
	if err != nil {
		r.Warnf("", "cannot fingerprint the step's inputs (%v): a resumed run will run it again", err)
		return ""
	}
	return fp
}

// skipped reports st as skipped: one progress frame at the step's full
// percentage, marked Skipped, and a log line.
func (r *Reporter) skipped() {
	r.finish()
	r.mu.Lock()
	pct := r.percentLocked()
	r.mu.Unlock()
	r.sink.Progress(Progress{Step: r.step, Index: r.index, Total: r.total, Percent: pct, Message: SkippedMessage, Skipped: true})
	r.log("info", "", SkippedMessage)
}
