package pipeline

import (
	"fmt"
	"strings"
)

// ModelProviders are the prefixes a model name may have.
var ModelProviders = []string{"openai", "anthropic", "demo"}

// ParseModelName splits "provider/model" and checks the provider.
func ParseModelName(name string) (provider, model string, err error) {
	provider, model, ok := strings.Cut(name, "/")
	if !ok || model == "" {
		return "", "", fmt.Errorf("model %q is not provider/model (providers: %s)", name, strings.Join(ModelProviders, ", "))
	}
	for _, p := range ModelProviders {
		if p == provider {
			return provider, model, nil
		}
	}
	return "", "", fmt.Errorf("model %q has an unknown provider %q (providers: %s)", name, provider, strings.Join(ModelProviders, ", "))
}

// Model cooldowns after a rate limit or overload, by how many in a row.
var cooldownLadder = []Duration{Duration(30e9), Duration(60e9), Duration(300e9)}

// CooldownFor is how long a model cools after its n-th consecutive rate
// limit or overload (n from 1), at least as long as the provider asked.
func CooldownFor(n int, retryAfter Duration) Duration {
	d := cooldownLadder[min(max(n, 1), len(cooldownLadder))-1]
	return max(d, retryAfter)
}

// MovesToNextModel is true for the error types after which the next model
// of the chain is tried.
func MovesToNextModel(errType string) bool {
	switch errType {
	case ErrRateLimited, ErrOverloaded, ErrTimeout, ErrAuth, ErrBilling, ErrModelNotFound, ErrImagesUnsupported:
		return true
	}
	return false
}

// CoolsDown is true for the error types that put a model on cooldown.
func CoolsDown(errType string) bool { return errType == ErrRateLimited || errType == ErrOverloaded }

// Transient is true for the error types that may clear up by waiting.
func Transient(errType string) bool {
	return errType == ErrRateLimited || errType == ErrOverloaded || errType == ErrTimeout
}

// Replies the session gives when a turn cannot be answered.
const (
	ReplyFormatError   = "⚠️ The model's answer could not be used. Please try again or rephrase."
	ReplyContentFilter = "⚠️ The model declined to answer this one (content filter)."
	ReplyContextReset  = "ℹ️ This conversation got too long for the model, so I started a new one."
)

// ReplyNoModel is the reply when every model of the chain failed.
func ReplyNoModel(errType string) string {
	if errType == "" {
		errType = "unknown error"
	}
	return "⚠️ Sorry, no model could answer right now (" + errType + "). Please try again in a moment."
}
