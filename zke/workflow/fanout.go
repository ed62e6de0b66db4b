package workflow

import (
	"context"
	"errors"
	"sync"
)

// ForEach runs fn for every item with at most limit running at once and
// returns every failure joined (errors.Join), each already wrapped by fn
// as it sees fit. It returns when all started calls have returned; once
// ctx ends no new call starts.
func ForEach[T any](ctx context.Context, items []T, limit int, fn func(ctx context.Context, item T) error) error {
	if limit <= 0 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(ctx, it)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
