// Package zke is singlecloud's installer: it creates, updates and removes
// Kubernetes clusters on bare Linux hosts over SSH. Every component runs as
// a Docker container reached through the node's Docker socket tunnelled
// over SSH (the RKE model), driven by a workflow of named, idempotent,
// checkpointed steps. zke takes a context, a configuration, the previous
// State and a Sink, and returns the new State; it knows nothing of HTTP or
// of singlecloud's database.
package zke
