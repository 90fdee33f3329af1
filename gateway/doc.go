// Package gateway is the gateway's side of Temporal: the Ingress through
// which platform adapters hand inbound messages and feedback to session
// workflows with SignalWithStart, acknowledging the platform only after
// Temporal accepted them.
package gateway
