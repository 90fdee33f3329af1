package main

import (
	"fmt"
	"strings"

	"github.com/replyflow/replyflow/pipeline"
)

// validateSessionSettings checks the session scope, the reset words and
// the reply prefix, each error naming its variable.
func (c Config) validateSessionSettings() []error {
	var errs []error
	if _, err := pipeline.ParseSessionScope(c.SessionScope); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_SESSION_SCOPE: %w", err))
	}
	for _, channel := range sortedKeys(c.SessionScopeByChannel) {
		if _, err := pipeline.ParseSessionScope(c.SessionScopeByChannel[channel]); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_SESSION_SCOPE_BY_CHANNEL for %s: %w", channel, err))
		}
	}
	if err := (pipeline.ParseOptions{ResetWords: c.ResetWords}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_RESET_WORDS: %w", err))
	}
	switch {
	case strings.ContainsAny(c.ReplyPrefix, "\r\n"):
		errs = append(errs, fmt.Errorf("REPLYFLOW_REPLY_PREFIX must be one line"))
	case len(c.ReplyPrefix) > pipeline.MaxReplyPrefixBytes:
		errs = append(errs, fmt.Errorf("REPLYFLOW_REPLY_PREFIX is %d bytes; at most %d", len(c.ReplyPrefix), pipeline.MaxReplyPrefixBytes))
	}
	return errs
}

// sessionScope is the session scope of a channel's group chats.
func (c Config) sessionScope(channel string) pipeline.SessionScope {
	name := c.SessionScope
	if byChannel, ok := c.SessionScopeByChannel[channel]; ok {
		name = byChannel
	}
	scope, _ := pipeline.ParseSessionScope(name) // validate checked it
	return scope
}
