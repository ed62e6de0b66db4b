package cli

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// clusterWatch is `cluster list [--only-ready] [--watch]`: the list, and
// while watching, the clusters that changed as they are now.
type clusterWatch struct {
	a         *app
	c         *client
	output    string
	onlyReady bool
	// shown are the clusters of the ready list as last printed
	// (onlyReady): a cluster that leaves it is printed once more.
	shown map[string]bool
}

func (w *clusterWatch) query() url.Values {
	if w.onlyReady {
		return url.Values{"onlyready": {"true"}}
	}
	return nil
}

// list prints the whole list.
func (w *clusterWatch) list(ctx context.Context) error {
	objs, err := listObjects(ctx, w.c, "/clusters", w.query())
	if err != nil {
		return err
	}
	w.shown = map[string]bool{}
	for _, o := range objs {
		w.shown[str(o["name"])] = true
	}
	return printList(w.a.Out, w.output, clusterKind(), objs)
}

// changed prints the clusters names as they are now: a deleted one as
// Deleted, one no longer granted not at all. With onlyReady, what the
// server's ready list holds, and once more a cluster that has left it.
func (w *clusterWatch) changed(ctx context.Context, names []string) error {
	var ready map[string]bool
	if w.onlyReady {
		objs, err := listObjects(ctx, w.c, "/clusters", w.query())
		if err != nil {
			return err
		}
		ready = map[string]bool{}
		for _, o := range objs {
			ready[str(o["name"])] = true
		}
	}
	objs := make([]object, 0, len(names))
	for _, n := range names {
		if w.onlyReady && !ready[n] && !w.shown[n] {
			continue // not ready before, nor now
		}
		var obj object
		err := w.c.do(ctx, http.MethodGet, "/clusters/"+url.PathEscape(n), nil, nil, &obj)
		var ae *APIError
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			obj = object{"name": n, "status": "Deleted"}
		case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
			continue // no longer granted
		case err != nil:
			return err
		}
		if w.onlyReady {
			w.shown[n] = ready[n]
		}
		objs = append(objs, obj)
	}
	return printChanges(w.a.Out, w.output, clusterKind(), objs)
}
