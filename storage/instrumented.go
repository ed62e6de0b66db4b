package storage

import "time"

// Store operations, as Instrument reports them.
const (
	OpGet    = "get"
	OpList   = "list" // List and ListPrefix
	OpPut    = "put"
	OpDelete = "delete" // Delete
	OpUpdate = "update"
	OpView   = "view"
)

// Instrumented is a Store that reports how long each call to the Store
// underneath takes (for Update and View, the whole transaction with its
// callback). Create it with Instrument.
type Instrumented struct {
	inner   Store
	observe func(op string, d time.Duration)
}

// Instrument wraps s so that observe learns the operation (OpGet, …) and
// duration of every call, errors included; a nil observe learns nothing.
// The wrapper also has s's Sealer, when s has one, so that it can stand
// where a *Bolt does.
func Instrument(s Store, observe func(op string, d time.Duration)) *Instrumented {
	if observe == nil {
		observe = func(string, time.Duration) {}
	}
	return &Instrumented{inner: s, observe: observe}
}

// Unwrap returns the Store underneath.
func (s *Instrumented) Unwrap() Store { return s.inner }

// Sealer returns the Sealer of the Store underneath, or nil when it has
// none.
func (s *Instrumented) Sealer() Sealer {
	if sealed, ok := s.inner.(interface{ Sealer() Sealer }); ok {
		return sealed.Sealer()
	}
	return nil
}

func (s *Instrumented) done(op string, start time.Time) { s.observe(op, time.Since(start)) }

func (s *Instrumented) Get(b Bucket, key string) ([]byte, error) {
	defer s.done(OpGet, time.Now())
	return s.inner.Get(b, key)
}

func (s *Instrumented) List(b Bucket) ([]KV, error) {
	defer s.done(OpList, time.Now())
	return s.inner.List(b)
}

func (s *Instrumented) ListPrefix(b Bucket, prefix string) ([]KV, error) {
	defer s.done(OpList, time.Now())
	return s.inner.ListPrefix(b, prefix)
}

func (s *Instrumented) Put(b Bucket, key string, value []byte) error {
	defer s.done(OpPut, time.Now())
	return s.inner.Put(b, key, value)
}

func (s *Instrumented) Delete(b Bucket, key string) error {
	defer s.done(OpDelete, time.Now())
	return s.inner.Delete(b, key)
}

func (s *Instrumented) Update(fn func(Tx) error) error {
	defer s.done(OpUpdate, time.Now())
	return s.inner.Update(fn)
}

func (s *Instrumented) View(fn func(Reader) error) error {
	defer s.done(OpView, time.Now())
	return s.inner.View(fn)
}

// Close closes the Store underneath; it is not observed.
func (s *Instrumented) Close() error { return s.inner.Close() }
