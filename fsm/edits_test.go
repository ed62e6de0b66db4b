package fsm

import (
	"errors"
	"testing"
)

func TestCanEdit(t *testing.T) {
	for _, s := range States() {
		m := New[string]("c1", s, nil)
		err := m.CanEdit(EditForgetHostKey)
		if want := s.Settled(); (err == nil) != want || AllowsEdit(s, EditForgetHostKey) != want {
			t.Errorf("%q: CanEdit(forgetHostKey) = %v, AllowsEdit = %v, want allowed=%v", s, err, AllowsEdit(s, EditForgetHostKey), want)
		}
		var ee *EditError
		if err != nil && (!errors.Is(err, ErrInvalidTransition) || !errors.As(err, &ee) || ee.State != s) {
			t.Errorf("%q: error %v is not an *EditError wrapping ErrInvalidTransition", s, err)
		}
	}
	if err := New[string]("c1", StateRunning, nil).CanEdit("rename"); err == nil {
		t.Error("an unknown edit was allowed")
	}
}
