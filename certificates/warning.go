package certificates

import (
	"fmt"
	"time"
)

// Thresholds are the days before a cluster's first expiry at which it is
// warned: early enough to plan (120), to act (30), and the last call (7).
func Thresholds() []int { return []int{120, 30, 7} }

// Warning is the calendar's word on one cluster: its first certificate to
// expire and the threshold it has passed.
type Warning struct {
	// Certificate is the first to expire.
	Certificate string    `json:"certificate"`
	NotAfter    time.Time `json:"notAfter"`
	DaysLeft    int       `json:"daysLeft"`
	// Within is the smallest threshold (days) the expiry is within (days
	// left at most that): 120, 30 or 7; 0 once it has expired.
	Within int `json:"within"`
	// Message says what expires when and what to do.
	Message string `json:"message"`
}

// WarningFor returns the warning due for a cluster whose certificates are
// cs, or nil when none expires within the largest threshold. Unreadable
// certificates are not counted.
func WarningFor(cs []Certificate, now time.Time) *Warning {
	var first *Certificate
	for i := range cs {
		c := &cs[i]
		if c.Error != "" || !c.Expires() {
			continue
		}
		if first == nil || c.NotAfter.Before(first.NotAfter) {
			first = c
		}
	}
	if first == nil {
		return nil
	}
	left := DaysLeft(first.NotAfter, now)
	within := -1
	for _, t := range Thresholds() {
		if left <= t {
			within = t
		}
	}
	if within < 0 {
		return nil
	}
	w := &Warning{Certificate: first.ID, NotAfter: first.NotAfter, DaysLeft: left, Within: within}
	if !first.NotAfter.After(now) {
		w.Within = 0
		w.Message = fmt.Sprintf("certificate %s expired on %s: the cluster's components that use it have stopped trusting or being trusted; rotate the cluster's certificates", first.ID, first.NotAfter.Format(time.DateOnly))
		return w
	}
	w.Message = fmt.Sprintf("certificate %s expires on %s, in %d days (within %d): rotate the cluster's certificates before then", first.ID, first.NotAfter.Format(time.DateOnly), left, within)
	return w
}
