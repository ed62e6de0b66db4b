package server

import (
	"context"
	"errors"
	"testing"
)

// TestStreamsRevalidate: the registry ends the streams whose user is gone
// or whose token's stamp is no longer the user's, and leaves the others
// (and every stream of a user whose record could not be read).
func TestStreamsRevalidate(t *testing.T) {
	st := newStreams(StreamLimits{PerUser: 10, PerAddress: 10, Total: 10}, systemAlarms{})
	open := func(user, stamp string) (context.Context, *streamEntry) {
		ctx, cancel := context.WithCancelCause(context.Background())
		e, err := st.admit(user, stamp, "127.0.0.1", cancel)
		if err != nil {
			t.Fatal(err)
		}
		return ctx, e
	}
	kept, _ := open("ann", "s1")
	changed, _ := open("bob", "old")
	deleted, _ := open("cy", "s1")
	unreadable, _ := open("dee", "s1")
	// A stream is registered with its token's stamp: one admitted as
	// the copy of the store learns of its password change is ended by
	// the revalidation that follows, never passed over as unchecked
	// (the stamp used to be set only after the upgrade).
	admitting, _ := open("eve", "old")
	st.revalidate(func(user string) (string, bool, error) {
		switch user {
		case "ann":
			return "s1", true, nil
		case "eve":
			return "new", true, nil
		case "bob":
			return "new", true, nil
		case "dee":
			return "", false, errors.New("read failed")
		}
		return "", false, nil
	})
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"same stamp", kept, nil},
		{"password changed", changed, endPasswordChanged},
		{"user deleted", deleted, endUserDeleted},
		{"unreadable user", unreadable, nil},
		{"admitted during the change", admitting, endPasswordChanged},
	} {
		if got := context.Cause(tt.ctx); (tt.want == nil && got != nil) || (tt.want != nil && !errors.Is(got, tt.want)) {
			t.Errorf("%s: cause %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestStreamRoomAgreesWithAdmit: the handlers' early check refuses
// exactly what admit would, for each bound, and registers nothing.
func TestStreamRoomAgreesWithAdmit(t *testing.T) {
	st := newStreams(StreamLimits{PerUser: 2, PerAddress: 3, Total: 4}, systemAlarms{})
	try := func(user, addr string) (roomErr, admitErr error) {
		roomErr = st.room(user, addr)
		_, admitErr = st.admit(user, "s", addr, func(error) {})
		return roomErr, admitErr
	}
	for i, tt := range []struct {
		user, addr string
		refused    bool
	}{
		{"ann", "a1", false}, {"ann", "a1", false}, {"ann", "a1", true}, // per user
		{"bob", "a1", false}, {"cy", "a1", true}, // per address
		{"cy", "a2", false}, {"dee", "a3", true}, // in all
	} {
		roomErr, admitErr := try(tt.user, tt.addr)
		var le *streamLimitError
		if (roomErr != nil) != tt.refused || (admitErr != nil) != tt.refused || (tt.refused && !errors.As(roomErr, &le)) {
			t.Errorf("stream %d (%s from %s): room %v, admit %v; want refused %v", i, tt.user, tt.addr, roomErr, admitErr, tt.refused)
		}
	}
}
