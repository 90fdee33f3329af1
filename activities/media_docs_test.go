package activities

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/codec"
)

// pdfBytes is what http.DetectContentType sniffs as application/pdf.
var pdfBytes = []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

func TestAPDFReachesTheModelAsADocumentPartOnceDownloaded(t *testing.T) {
	doc := pipeline.Media{Kind: "document", Ref: "pdf-1", MimeType: "application/pdf", Name: "report.pdf"}
	m := newMediaTurn(t, doc)
	m.tg.AddFile("pdf-1", pdfBytes)

	m.turn(t, "openai/gpt-4o", "summarise it", doc)
	m.turn(t, "openai/gpt-4o", "summarise it", doc)
	reqs := m.model.Requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		assert.Equal(t, []modeltest.Document{{Name: "report.pdf", MediaType: "application/pdf", Data: pdfBytes, Part: "file"}}, r.Documents)
		assert.Empty(t, r.Images)
		last := r.Messages[len(r.Messages)-1]
		assert.Contains(t, last, "summarise it")
		assert.Contains(t, last, `[document "report.pdf" (application/pdf) attached, shown below as a document]`)
		assert.NotContains(t, last, "pdf-1")
	}
	assert.Equal(t, 1, m.tg.Downloads(), "a later attempt reads the PDF from the store")
}

func TestAModelThatTakesNoPDFsIsToldTheDocumentIsNotShownAndWhy(t *testing.T) {
	declared := pipeline.Media{Kind: "document", Ref: "pdf-1", MimeType: "application/pdf", Name: "report.pdf"}
	undeclared := pipeline.Media{Kind: "document", Ref: "pdf-2", MimeType: "application/octet-stream", Name: "scan"}
	m := newMediaTurn(t, declared, undeclared)
	m.tg.AddFile("pdf-1", pdfBytes)
	m.tg.AddFile("pdf-2", pdfBytes)

	m.turn(t, "openai/some-local-model", "read these", declared, undeclared)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Documents)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Equal(t, 2, strings.Count(last, "not shown: this model does not take PDF documents"), last)
	assert.Equal(t, 1, m.tg.Downloads(), "one declared a PDF is not downloaded; the other is sniffed")

	// A model that reads them is configured by name.
	m.acts.Media.ReadsPDFs = func(model string) bool { return model == "openai/some-local-model" }
	m.turn(t, "openai/some-local-model", "read these", declared, undeclared)
	assert.Len(t, m.model.Requests()[1].Documents, 2)
}

func TestATextFileIsInlineInTheUserTextMarkedAsTheUsersFileAndBounded(t *testing.T) {
	notes := pipeline.Media{Kind: "document", Ref: "txt-1", MimeType: "text/plain", Name: "notes.txt"}
	long := pipeline.Media{Kind: "document", Ref: "txt-2", MimeType: "text/plain", Name: "log.txt"}
	binary := pipeline.Media{Kind: "document", Ref: "zip-1", MimeType: "text/plain", Name: "fake.txt"}
	m := newMediaTurn(t, notes, long, binary)
	m.acts.ContextTokens = 200_000
	m.tg.AddFile("txt-1", []byte("buy milk\ncall Bob"))
	m.tg.AddFile("txt-2", []byte(strings.Repeat("é", maxInlineTextBytes)))
	m.tg.AddFile("zip-1", []byte("PK\x03\x04\x14\x00\x00\x00binary"))

	m.turn(t, "openai/gpt-4o", "what do these say?", notes, long, binary)
	reqs := m.model.Requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Documents)
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Contains(t, last, `[document "notes.txt" (text/plain) attached; its text follows, as the user sent it]`+"\n"+
		`<<<file "notes.txt" sent by the user`+"\nbuy milk\ncall Bob\n"+`>>>end of file "notes.txt"`)
	assert.Contains(t, last, `[document "log.txt" (text/plain) attached; its text follows, as the user sent it (its first 65536 of 131072 bytes)]`)
	assert.Equal(t, maxInlineTextBytes/2, strings.Count(last, "é"), "cut at the bound, on a character boundary")
	assert.Contains(t, last, `[document "fake.txt" (text/plain) attached, but it is not a file the model can take: images, PDFs and plain text are (its bytes are application/zip)]`)
}

func TestWithTheCodecOnAFileIsKeptEncryptedAndReadBackByTheNextAttempt(t *testing.T) {
	doc := pipeline.Media{Kind: "document", Ref: "pdf-1", MimeType: "application/pdf", Name: "report.pdf"}
	m := newMediaTurn(t, doc)
	key, err := codec.GenerateKey("k1")
	require.NoError(t, err)
	blobs, err := codec.NewBlobs([]codec.Key{key})
	require.NoError(t, err)
	m.db.SetSealer(blobs)
	m.tg.AddFile("pdf-1", pdfBytes)

	m.turn(t, "openai/gpt-4o", "summarise it", doc)
	m.turn(t, "openai/gpt-4o", "summarise it", doc)
	assert.Equal(t, 1, m.tg.Downloads(), "the second attempt opened what the first kept")
	reqs := m.model.Requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.Len(t, r.Documents, 1)
		assert.Equal(t, pdfBytes, r.Documents[0].Data)
	}
	got, err := m.db.MessageMedia(context.Background(), m.key.WorkflowID(), []string{"7"})
	require.NoError(t, err)
	require.Len(t, got["7"], 1)
	assert.Equal(t, base64.StdEncoding.EncodeToString(pdfBytes), got["7"][0].Content)
}

func TestTextFilesTakeAtMostHalfThePromptsBudget(t *testing.T) {
	first := pipeline.Media{Kind: "document", Ref: "txt-1", MimeType: "text/plain", Name: "a.txt"}
	second := pipeline.Media{Kind: "document", Ref: "txt-2", MimeType: "text/plain", Name: "b.txt"}
	m := newMediaTurn(t, first, second)
	m.acts.ContextTokens = 2000 // 4000 bytes of text files
	m.tg.AddFile("txt-1", []byte(strings.Repeat("q", 3000)))
	m.tg.AddFile("txt-2", []byte(strings.Repeat("z", 3000)))

	m.turn(t, "openai/gpt-4o", "", first, second)
	reqs := m.model.Requests()
	last := reqs[0].Messages[len(reqs[0].Messages)-1]
	assert.Equal(t, 3000, strings.Count(last, "q"), "the first file whole")
	assert.Contains(t, last, `[document "b.txt" (text/plain) attached; its text follows, as the user sent it (its first 1000 of 3000 bytes)]`)
	assert.Equal(t, 1000, strings.Count(last, "z"))

	m.acts.ContextTokens = 1500 // 3000 bytes: the first file takes them all
	m.turn(t, "openai/gpt-4o", "", first, second)
	reqs = m.model.Requests()
	last = reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, 3000, strings.Count(last, "q"))
	assert.Contains(t, last, `[document "b.txt" (text/plain) attached, not shown: the turn's other text files take all the room a turn gives files]`)
	assert.Zero(t, strings.Count(last, "z"))
}
