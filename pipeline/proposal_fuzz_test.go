package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseAction reads button actions, which come back from the platform
// as whatever a client sent: only "approve:<id>" and "reject:<id>" pass,
// and they pass whole.
func FuzzParseAction(f *testing.F) {
	for _, seed := range []string{"approve:p1", "reject:p2-3", "reject:", ":p1", "delete:p1", "approve:p1:x", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, action string) {
		decision, id, ok := ParseAction(action)
		if !ok {
			if decision != "" || id != "" {
				t.Fatalf("refused %q but returned %q, %q", action, decision, id)
			}
			return
		}
		if decision != DecisionApprove && decision != DecisionReject {
			t.Fatalf("accepted %q with decision %q", action, decision)
		}
		if id == "" || decision+":"+id != action {
			t.Fatalf("accepted %q as %q + %q", action, decision, id)
		}
	})
}

// FuzzParseProposalAction reads the chat session's button actions:
// what passes is exactly its parts put together again, and the sender it
// names is a valid ID, for the gateway makes a workflow ID of it.
func FuzzParseProposalAction(f *testing.F) {
	for _, seed := range []string{"approve:p1", "reject:p2@U1", "approve:p1@a@b.org", "approve:p1@", "approve:@U1", "reject:p1@a:b", "approve:p1@~", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, action string) {
		decision, id, sender, ok := ParseProposalAction(action)
		if !ok {
			if decision != "" || id != "" || sender != "" {
				t.Fatalf("refused %q but returned %q, %q, %q", action, decision, id, sender)
			}
			return
		}
		if decision != DecisionApprove && decision != DecisionReject {
			t.Fatalf("accepted %q with decision %q", action, decision)
		}
		whole := decision + ":" + id
		if sender != "" {
			whole += "@" + sender
			if err := ValidateID("sender", sender); err != nil {
				t.Fatalf("accepted %q with sender %q: %v", action, sender, err)
			}
		}
		if id == "" || strings.Contains(id, "@") || whole != action {
			t.Fatalf("accepted %q as %q + %q + %q", action, decision, id, sender)
		}
	})
}

// FuzzSummarizeArgs renders a model's tool arguments, which may be any
// text, for a proposal message: one line of valid UTF-8 that platforms
// accept.
func FuzzSummarizeArgs(f *testing.F) {
	for _, seed := range []string{`{"to":"bob","amount":100}`, `{"a":{"b":[1,2]}}`, "not json", `{"x":"` + strings.Repeat("é", 80) + `"}`, "\xff\xfe", `{"k\n":"v\r\n"}`, "null"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, arguments string) {
		s := SummarizeArgs(arguments)
		if !utf8.ValidString(s) {
			t.Fatalf("summary of %q is not valid UTF-8: %q", arguments, s)
		}
		if strings.ContainsAny(s, "\n\r") {
			t.Fatalf("summary of %q spans lines: %q", arguments, s)
		}
	})
}
