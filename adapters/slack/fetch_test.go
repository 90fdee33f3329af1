package slack_test

import (
	"context"
	"errors"
	"testing"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// A file deleted after it was shared is gone for good: files.info's
// file_deleted (and file_not_found) is Permanent, so the model is told
// the platform no longer has it, not that Slack may answer later.
func TestFetchFileOfADeletedFileIsPermanent(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Subtype: "file_share",
		Files: []slacktest.File{{ID: "FDELETED", Name: "q3.pdf", Mimetype: "application/pdf", Data: []byte("%PDF-1.7"), Deleted: true}}})
	for _, ref := range []string{"FDELETED", "FNEVERSHARED"} {
		_, err := c.FetchFile(context.Background(), pipeline.Media{Kind: "document", Ref: ref, MimeType: "application/pdf", Name: "q3.pdf"}, 1<<20)
		if kind, _ := adapters.Classify(err); kind != adapters.Permanent {
			t.Errorf("FetchFile(%s) = %v (%v), want a Permanent error", ref, err, kind)
		}
	}
	if n := fake.Downloads(); n != 0 {
		t.Errorf("url_private served %d files, want none", n)
	}
}

// A file over the limit is refused from the size files.info gives,
// before url_private is asked for it.
func TestFetchFileRefusesAFileOverTheLimitBeforeItsDownload(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Subtype: "file_share",
		Files: []slacktest.File{{ID: "FBIG", Name: "big.pdf", Mimetype: "application/pdf", Data: make([]byte, 2048)}}})
	_, err := c.FetchFile(context.Background(), pipeline.Media{Kind: "document", Ref: "FBIG", MimeType: "application/pdf", Name: "big.pdf"}, 1024)
	if !errors.Is(err, adapters.ErrFileTooLarge) {
		t.Errorf("FetchFile = %v, want ErrFileTooLarge", err)
	}
	if kind, _ := adapters.Classify(err); kind != adapters.Permanent {
		t.Errorf("the error is %v, want Permanent", kind)
	}
	if n := fake.Downloads(); n != 0 {
		t.Errorf("url_private served %d files, want none", n)
	}
}
