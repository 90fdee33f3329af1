package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadInputCaseFormat(t *testing.T) {
	vars := corpusVars{TelegramSecret: "tg-secret", WebchatBotToken: "wc-token", TelegramNow: 1700000000, Run: 7}
	c, err := parseBadInput("webchat", "sample", []byte(`# why
method: POST
path: /api/chats/<% repeat 3 "c" %>-<% .Run %>/messages?x=1
header: Content-Type: application/json
header: Authorization: Bearer <% .WebchatBotToken %>
session: ccc-<% .Run %>
expect: accepted 202
repeat: 2
seen: 1
---
{"a":"<% "\x00\xff" %>","n":<% nest 2 "[" "]" %>}
---
`), vars)
	require.NoError(t, err)
	assert.Equal(t, "/api/chats/ccc-7/messages?x=1", c.Path)
	assert.Equal(t, "ccc-7", c.Session)
	assert.Equal(t, "Bearer wc-token", c.header("authorization"))
	assert.Equal(t, badInputOutcome{Kind: outcomeAccepted, Status: 202}, c.Expect)
	assert.Equal(t, 2, c.Repeat)
	assert.Equal(t, "{\"a\":\"\x00\xff\",\"n\":[[]]}\n---", string(c.Body), "the body is everything after the first ---, to the last newline")

	c, err = parseBadInput("slack", "no-body", []byte("method: GET\npath: /slack/events\nexpect: 4xx\n"), vars)
	require.NoError(t, err)
	assert.Empty(t, c.Body)
	assert.Equal(t, badInputOutcome{Kind: outcomeRefused}, c.Expect)

	for bad, want := range map[string]string{
		"method: POST\npath: /x\nexpect: accepted 202\n":             "names its session",
		"method: POST\npath: /x\nexpect: accepted 202\nsession: x\n": "ends in <% .Run %>",
		"method: POST\npath: /x\nexpect: 500\n":                      "a refusal is a 4xx",
		"method: POST\npath: /x\nexpect: ignored 404\n":              "answers 2xx",
		"method: POST\npath: /x\nexpect: 400\nbody: x\n":             "unknown key",
		"method: POST\npath: /x\nexpect: 400\nsign: maybe\n":         "sign must be one of",
		"method: POST\npath: /x\n":                                   "expect is required",
		"method: POST\npath: /x\nexpect: 400\n---\n<% .Nope %>\n":    "body",
	} {
		_, err := parseBadInput("webchat", "bad", []byte(bad), vars)
		assert.ErrorContains(t, err, want, bad)
	}
	_, err = parseBadInput("webchat", "control", []byte("method: POST\npath: /x\nexpect: 400\n"), vars)
	assert.ErrorContains(t, err, "a control case is accepted")
}
