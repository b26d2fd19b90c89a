package runtime

import "embed"

// Source holds this package's files, which a2agen copies into generated
// packages.
//
//go:embed *.go
var Source embed.FS
