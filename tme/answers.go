package tme

// Answers rendered from a page are kept beside it, under keys.Response
// with the channel and a name that says everything the rendering depends
// on: the face's shape, then which page (Request.Name) or which part of it.

// ShapeREST starts the names of REST v1 answers. It is the version of
// their JSON, so that an answer rendered in an earlier shape (by an older
// process sharing Valkey during a deploy, say) is never served as this
// one; change it whenever the shape changes.
const ShapeREST = "shape2:"
