package httpcache

import (
	"net/http"
	"strconv"
)

// Form is the form of an answer chosen for one request: what every face
// sends, whether its compressed forms are kept in a Rep, beside a feed
// build or nowhere.
type Form struct {
	Body   []byte
	Coding Coding
	// ETag is the answer's tag, weak for a compressed form (its bytes are
	// not the identity form's, its content is); "" when it has none.
	ETag string
	// Vary reports that the choice depended on Accept-Encoding.
	Vary bool
	// Length is Body's length in decimal when it was made ahead (a Rep
	// kept with its forms); "" to count it when sent.
	Length string
}

// Keep gets an answer's form in coding c from where its caller keeps it
// (beside a feed build, say), making it with Encoder.Compress the first
// time.
type Keep func(c Coding) ([]byte, error)

// Choose picks the form of body, whose strong tag is etag ("" for none),
// for a request accepting acceptEncoding: as it is when it is too small
// to compress, else in the coding Negotiate picks, got through keep (nil:
// compressed now). A nil Encoder sends every answer as it is.
func (e *Encoder) Choose(acceptEncoding string, body []byte, etag string, keep Keep) (Form, error) {
	f := Form{Body: body, ETag: etag}
	if !e.Compressible(len(body)) {
		return f, nil
	}
	f.Vary = true
	c := Negotiate(acceptEncoding)
	if c == Identity {
		return f, nil
	}
	if keep == nil {
		f.Body = e.Compress(c, body)
	} else {
		coded, err := keep(c)
		if err != nil {
			return Form{}, err
		}
		f.Body = coded
	}
	f.Coding = c
	if etag != "" {
		f.ETag = Weak(etag)
	}
	return f, nil
}

// ChooseRep is Choose for an answer kept as a Rep: its kept forms and
// their lengths are used as they are.
func (e *Encoder) ChooseRep(r *Rep, acceptEncoding string) Form {
	body, c, etag, vary := e.Select(r, acceptEncoding)
	return Form{Body: body, Coding: c, ETag: etag, Vary: vary, Length: r.ContentLength(c)}
}

// Write answers a request with f: its validators (WriteValidators), then
// 304 when the request's If-None-Match holds its ETag, else status with
// the representation (Send).
func Write(w http.ResponseWriter, r *http.Request, status int, f Form, contentType, cacheControl string) {
	WriteValidators(w.Header(), f, cacheControl)
	if NoneMatch(r.Header.Get("If-None-Match"), f.ETag) {
		NotModified(w)
		return
	}
	Send(w, r, status, f, contentType)
}

// WriteValidators sets what a 304 carries as the 200 would (RFC 9110
// §15.4.5): Vary by Accept-Encoding when the form depended on it, the
// ETag when there is one, and cacheControl when given.
func WriteValidators(hd http.Header, f Form, cacheControl string) {
	if f.Vary {
		hd.Add("Vary", "Accept-Encoding")
	}
	if f.ETag != "" {
		hd.Set("ETag", f.ETag)
	}
	if cacheControl != "" {
		hd.Set("Cache-Control", cacheControl)
	}
}

// NotModified answers 304, without the representation's own headers.
func NotModified(w http.ResponseWriter) {
	hd := w.Header()
	hd.Del("Content-Type")
	hd.Del("Content-Encoding")
	hd.Del("Content-Length")
	w.WriteHeader(http.StatusNotModified)
}

// Send writes f with status: its Content-Type (when given), coding and
// length, then its bytes; a HEAD gets the headers of the same GET.
func Send(w http.ResponseWriter, r *http.Request, status int, f Form, contentType string) {
	hd := w.Header()
	if contentType != "" {
		hd.Set("Content-Type", contentType)
	}
	if f.Coding != Identity {
		hd.Set("Content-Encoding", f.Coding.String())
	}
	n := f.Length
	if n == "" {
		n = strconv.Itoa(len(f.Body))
	}
	hd.Set("Content-Length", n)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.Body)
	}
}
