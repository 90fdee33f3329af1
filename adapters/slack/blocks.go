package slack

import (
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/pipeline"
)

// sectionLimit is Slack's limit on a section block's text.
const sectionLimit = 3000

// withButtons is a chunk as Block Kit: its text in sections (cut at
// lines to fit sectionLimit) and an actions block with one button per
// pipeline.Button, whose action_id and value are the button's Action (it
// names the proposal; the session is the channel the press comes from).
func withButtons(text string, buttons []pipeline.Button) []slack.Block {
	var blocks []slack.Block
	for _, part := range sections(text) {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, part, false, false), nil, nil))
	}
	if len(buttons) == 0 {
		return blocks
	}
	elements := make([]slack.BlockElement, len(buttons))
	for i, b := range buttons {
		elements[i] = slack.NewButtonBlockElement(b.Action, b.Action, slack.NewTextBlockObject(slack.PlainTextType, b.Text, true, false))
	}
	return append(blocks, slack.NewActionBlock("replyflow_actions", elements...))
}

// sections cuts text at line ends into parts of at most sectionLimit
// bytes (a line longer than that is cut where it reaches it).
func sections(text string) []string {
	var parts []string
	for len(text) > sectionLimit {
		cut := strings.LastIndexByte(text[:sectionLimit], '\n')
		if cut <= 0 {
			cut = sectionLimit
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		parts = append(parts, text[:cut])
		text = strings.TrimPrefix(text[cut:], "\n")
	}
	if strings.TrimSpace(text) != "" {
		parts = append(parts, text)
	}
	return parts
}
