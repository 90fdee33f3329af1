package main

import (
	"fmt"
	"time"

	"github.com/replyflow/replyflow/activities"
)

// validateLinks checks the bounds of link reading, each error naming its
// variable. They are checked whether or not REPLYFLOW_LINKS is on, so a
// bound set wrong is found before the feature is turned on.
func (c Config) validateLinks() []error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.LinksMax >= 1 && c.LinksMax <= 10, "REPLYFLOW_LINKS_MAX must be from 1 to 10 (links read per message), got %d", c.LinksMax)
	check(c.LinksMaxBytes >= 1<<10 && c.LinksMaxBytes <= 10<<20, "REPLYFLOW_LINKS_MAX_BYTES must be from 1024 to 10485760 (10 MiB), got %d", c.LinksMaxBytes)
	check(c.LinksMaxText >= 256 && c.LinksMaxText <= 64<<10, "REPLYFLOW_LINKS_MAX_TEXT must be from 256 to 65536 bytes, got %d", c.LinksMaxText)
	check(c.LinksTimeout >= time.Second && c.LinksTimeout <= time.Minute, "REPLYFLOW_LINKS_TIMEOUT must be from 1s to 1m, got %s", c.LinksTimeout)
	return errs
}

// links is how turns read the pages users link to; nil without
// REPLYFLOW_LINKS.
func (c Config) links() *activities.Links {
	if !c.Links {
		return nil
	}
	return &activities.Links{MaxLinks: c.LinksMax, MaxBytes: c.LinksMaxBytes, MaxText: c.LinksMaxText, Timeout: c.LinksTimeout}
}
