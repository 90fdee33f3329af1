// Package hostcheck tells whether a request's Host names this machine's
// loopback. A server that trusts whoever reaches it on loopback (the web
// chat in none mode, replyflow dev's codec endpoint) answers only those
// names: a web page whose own name an attacker resolves to 127.0.0.1 (DNS
// rebinding) sends its name as Host, and is refused.
package hostcheck

import (
	"net"
	"strings"
)

// Names is how a refusal says which names are answered.
const Names = "localhost, 127.0.0.1 or [::1] (with or without the port)"

// Loopback reports whether host, a Host header with or without its port,
// is localhost or a loopback IP address. An empty Host (an HTTP/1.0
// client's; a browser always sends one) is taken as loopback, since the
// server itself listens only there. The port is not compared: a rebinding
// page cannot make the browser send a loopback name with any port.
func Loopback(host string) bool {
	if host == "" {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}
