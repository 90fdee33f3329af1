// Package workers binds replyflow to Temporal at the process level: it builds
// the worker (workflow and activity registration under their contract names,
// worker options, the workflow cache). The gateway's side of Temporal, the
// ingress, is package gateway.
//
// It holds no business rules and must not be imported by workflows,
// activities or adapters: the arrows point from here to them.
package workers
