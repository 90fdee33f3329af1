package adapters

import "strings"

// placeholderMarks are what the committed examples put where a secret
// goes (deploy/compose/replyflow.env.example,
// deploy/kubernetes/secret.example.yaml): "change-me", and
// "change-me-to-32-random-bytes-base64", which is long enough to pass a
// length check.
var placeholderMarks = []string{"change-me", "changeme", "change_me"}

// Placeholder reports whether secret is an example's placeholder rather
// than a secret: a copied example file left as it is would otherwise
// run with a value anyone can read on GitHub (a web chat key that signs
// an owner's token for anyone, a bot token that posts as the bot). The
// caller refuses it at start and names the variable.
func Placeholder(secret string) bool {
	lower := strings.ToLower(secret)
	for _, mark := range placeholderMarks {
		if strings.Contains(lower, mark) {
			return true
		}
	}
	return false
}
