package webchat

import "bytes"

// sniffSound names the sound formats the transcription API reads that
// http.DetectContentType leaves as application/octet-stream: an MP3 that
// starts at its first frame, with no ID3 tag before it (what most
// encoders and phones write when no title is set); an .m4a whose brands
// name no "mp4" (only M4A or M4B, as iTunes and Apple's Voice Memos
// write it); and FLAC. It answers "" for anything else.
func sniffSound(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("fLaC")):
		return "audio/flac"
	case isAppleAudio(data):
		return "audio/mp4"
	case isMPEGAudioFrame(data):
		return "audio/mpeg"
	}
	return ""
}

// isAppleAudio is whether data starts with an MP4 "ftyp" box whose major
// brand is Apple's audio (M4A) or audiobook (M4B) brand.
func isAppleAudio(data []byte) bool {
	if len(data) < 12 || !bytes.Equal(data[4:8], []byte("ftyp")) {
		return false
	}
	brand := string(data[8:12])
	return brand == "M4A " || brand == "M4B "
}

// isMPEGAudioFrame is whether data starts with an MPEG audio frame
// header of layer I, II or III: an 11-bit frame sync, then a version, a
// layer, a bitrate and a sample rate that are not the reserved or
// invalid values. A file of other bytes that happens to start so goes to
// the transcription API, which answers that it cannot read it; the user
// is told so.
func isMPEGAudioFrame(data []byte) bool {
	if len(data) < 4 || data[0] != 0xFF || data[1]&0xE0 != 0xE0 {
		return false
	}
	version := data[1] >> 3 & 0x3
	layer := data[1] >> 1 & 0x3
	bitrate := data[2] >> 4
	sampleRate := data[2] >> 2 & 0x3
	return version != 1 && layer != 0 && bitrate != 0 && bitrate != 0xF && sampleRate != 3
}
