module github.com/a2abind/a2abind

go 1.26

require (
	github.com/a2aproject/a2a-go/v2 v2.3.1
	github.com/dave/jennifer v1.7.1
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/text v0.33.0 // indirect
)
