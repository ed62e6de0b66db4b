package clustermanager

import "context"

// actorKey carries the user a request acts for.
type actorKey struct{}

// WithActor returns ctx carrying the name of the user who makes the
// request, so that the operations it starts record who started them
// (Operation.StartedBy). The server sets it for every authenticated
// request; it is request-scoped data, which is what context values are
// for.
func WithActor(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, actorKey{}, user)
}

// ActorFrom returns the user set by WithActor, or "".
func ActorFrom(ctx context.Context) string {
	user, _ := ctx.Value(actorKey{}).(string)
	return user
}
