// Package workers binds replyflow to Temporal at the process level: it builds
// the worker (workflow and activity registration under their contract names,
// worker options) and the Ingress through which the gateway hands inbound
// messages to session workflows with SignalWithStart.
//
// It holds no business rules and must not be imported by workflows,
// activities or adapters: the arrows point from here to them.
package workers
