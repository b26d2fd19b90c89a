module github.com/a2abind/a2abind

go 1.26

require (
	github.com/dave/jennifer v1.7.1
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.33.0 // indirect
