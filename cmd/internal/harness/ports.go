package harness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports the tests name (a server restarted on its old address, a webhook
// registered once) are drawn below the kernel's ephemeral range: a port
// from ":0" stays in that range, and while a killed server is down, any
// outgoing connection or other process's ":0" listener on the machine may
// be given it, so the restart fails with "address already in use". Below
// the range, only a process that names the port itself can take it.
// They also stay below 32768: a real cluster's membership table keeps
// ports in a smallint.
const (
	namedPortsFloor   = 20000
	namedPortsCeiling = 32768
	// defaultEphemeralLow is Linux's default when the range is unreadable.
	defaultEphemeralLow = 32768
	// minNamedPorts is the smallest span worth drawing from; below it the
	// draw falls back to ":0".
	minNamedPorts = 1000
	// drawAttempts bounds the search for a free port in the span.
	drawAttempts = 200
)

// FreePort is a TCP port on 127.0.0.1 nobody listens on now, outside the
// ephemeral range (see namedPortsFloor).
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreeAddr is "127.0.0.1:<FreePort>".
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

// FreePorts are n distinct TCP ports on 127.0.0.1 nobody listens on now,
// outside the ephemeral range (all held open together while they are
// picked, so none repeats).
func FreePorts(n int) ([]int, error) {
	low, high := namedPortsFloor, min(ephemeralLow(), namedPortsCeiling)
	ports := make([]int, 0, n)
	for range n {
		ln, err := listenBelow(low, high)
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// listenBelow listens on a random free port in [low, high), or on ":0"
// when that span is too small to draw from.
func listenBelow(low, high int) (net.Listener, error) {
	if high-low < minNamedPorts {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var lastErr error
	for range drawAttempts {
		port := low + rand.IntN(high-low)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			return ln, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("no free port in %d-%d after %d tries: %w", low, high-1, drawAttempts, lastErr)
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow
	}
	low, err := parseEphemeralLow(string(raw))
	if err != nil {
		return defaultEphemeralLow
	}
	return low
}

// parseEphemeralLow reads the first number of "32768\t60999\n".
func parseEphemeralLow(raw string) (int, error) {
	fields := strings.Fields(raw)
	if len(fields) != 2 {
		return 0, errors.New("ip_local_port_range: want two numbers")
	}
	return strconv.Atoi(fields[0])
}
