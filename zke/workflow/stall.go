package workflow

import "time"

// Stall says that a step has run past its deadline and what it is doing:
// the node it works on, what it waits for and the last error it saw, with
// a hint when one is known. A step keeps trying after its deadline until
// its own bounded waits give up; the stall only makes the wait visible.
type Stall struct {
	Step       string    `json:"step"`
	Node       string    `json:"node,omitempty"`
	WaitingFor string    `json:"waitingFor,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
	Hint       string    `json:"hint,omitempty"`
	Since      time.Time `json:"since"`
}
