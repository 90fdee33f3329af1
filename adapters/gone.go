package adapters

import "errors"

// ErrMessageGone is what an adapter's Edit wraps when the platform says
// the message to edit no longer exists (deleted by a user or an
// admin). Retrying the edit cannot help; a caller that must show the
// text (a reply over its streamed preview) sends it as a new message
// instead. Each adapter decides which of its platform's answers mean
// gone, in its classify.
var ErrMessageGone = errors.New("the message to edit is gone (deleted)")

// Gone marks a classified failure as a message that is gone: the result
// keeps err's kind (adapters.Classify) and its text, and MessageGone
// reports true for it.
func Gone(err error) error { return &goneError{err: err} }

// MessageGone reports whether err says the message it concerned is gone.
func MessageGone(err error) bool { return errors.Is(err, ErrMessageGone) }

type goneError struct{ err error }

func (g *goneError) Error() string        { return g.err.Error() }
func (g *goneError) Unwrap() error        { return g.err }
func (g *goneError) Is(target error) bool { return target == ErrMessageGone }
