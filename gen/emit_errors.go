package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

func genErrors(f *jen.File, errs []*model.ErrorToken) {
	cmt(f, "Token identifies an error. It is an error's identity: the same JSON-RPC\ncode means different things in different profiles, so compare tokens, never\ncodes alone.")
	f.Type().Id("Token").String()
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, e := range errs {
			cmt(g, docAs("Token"+e.Name, e.Description, roleValue))
			g.Id("Token" + e.Name).Id("Token").Op("=").Lit(e.Token)
		}
	})
	cmt(f, "Profile names the specification that defines a token.")
	f.Type().Id("Profile").String()
	cmt(f, "The profiles of the table, in order of first use.")
	var profiles []string
	seen := map[string]bool{}
	for _, e := range errs {
		if !seen[e.Profile] {
			seen[e.Profile] = true
			profiles = append(profiles, e.Profile)
		}
	}
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, p := range profiles {
			g.Id(profileName(p)).Id("Profile").Op("=").Lit(p)
		}
	})
	cmt(f, "DataShape says how an error's data member is laid out.")
	f.Type().Id("DataShape").String()
	cmt(f, "The data shapes.")
	f.Const().DefsFunc(func(g *jen.Group) {
		cmt(g, "DataNone means the error has no data.")
		g.Id("DataNone").Id("DataShape").Op("=").Lit("none")
		cmt(g, "DataErrorInfo is the form of A2A v1.0: an array holding a google.rpc.ErrorInfo whose reason names the error.")
		g.Id("DataErrorInfo").Id("DataShape").Op("=").Lit("error_info")
		cmt(g, "DataA2AError is the form of the MQTT binding: an object {\"a2a_error\": token}.")
		g.Id("DataA2AError").Id("DataShape").Op("=").Lit("a2a_error")
		cmt(g, "DataOffline is the form of the offline profile: {\"error\": token, \"queued\": …, \"retryAfterSec\"?, \"kind\"?}.")
		g.Id("DataOffline").Id("DataShape").Op("=").Lit("offline")
	})
	cmt(f, "ErrorInfo describes one token.")
	f.Type().Id("ErrorInfo").Struct(
		jen.Id("Token").Id("Token"),
		jen.Comment("Code is the JSON-RPC error code."),
		jen.Id("Code").Int(),
		jen.Comment("HTTPStatus is the HTTP status of the HTTP binding, or 0."),
		jen.Id("HTTPStatus").Int(),
		jen.Id("Profile").Id("Profile"),
		jen.Comment("Retryable says a requester may send the same request again."),
		jen.Id("Retryable").Bool(),
		jen.Id("Data").Id("DataShape"),
		jen.Comment("Message is the default message."),
		jen.Id("Message").String(),
		jen.Comment("Reference says where the token is specified."),
		jen.Id("Reference").String(),
	)
	f.Var().Id("errorTable").Op("=").Index(jen.Op("...")).Id("ErrorInfo").ValuesFunc(func(g *jen.Group) {
		for _, e := range errs {
			g.Values(jen.Dict{
				jen.Id("Token"): jen.Id("Token" + e.Name), jen.Id("Code"): jen.Lit(e.Code), jen.Id("HTTPStatus"): jen.Lit(e.HTTPStatus),
				jen.Id("Profile"): jen.Id(profileName(e.Profile)), jen.Id("Retryable"): jen.Lit(e.Retryable),
				jen.Id("Data"): jen.Id("DataShape").Call(jen.Lit(e.Data)), jen.Id("Message"): jen.Lit(e.Message), jen.Id("Reference"): jen.Lit(e.Reference),
			})
		}
	})
	cmt(f, "ErrorInfos returns every token's description in table order.")
	f.Func().Id("ErrorInfos").Params().Index().Id("ErrorInfo").Block(
		jen.Return(jen.Append(jen.Index().Id("ErrorInfo").Values(), jen.Id("errorTable").Index(jen.Op(":")).Op("..."))),
	)
	cmt(f, "Info returns the description of a token.")
	f.Func().Params(jen.Id("t").Id("Token")).Id("Info").Params().Params(jen.Id("ErrorInfo"), jen.Bool()).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Id("errorTable")).Block(
			jen.If(jen.Id("e").Dot("Token").Op("==").Id("t")).Block(jen.Return(jen.Id("e"), jen.True())),
		),
		jen.Return(jen.Id("ErrorInfo").Values(), jen.False()),
	)
	cmt(f, "Error is a protocol error: a token with its code, HTTP status, message and\ndata. Errors compare equal under errors.Is when their tokens are equal, so\nerrors.Is(err, ErrTaskNotFound) works whatever the message.")
	f.Type().Id("Error").Struct(
		jen.Id("Token").Id("Token"),
		jen.Id("Code").Int(),
		jen.Id("HTTPStatus").Int(),
		jen.Id("Message").String(),
		jen.Comment("Data is the error's data member, if any."),
		jen.Id("Data").Any(),
	)
	cmt(f, "Error returns the message and the token.")
	f.Func().Params(jen.Id("e").Op("*").Id("Error")).Id("Error").Params().String().Block(
		jen.Return(jen.String().Call(jen.Id("e").Dot("Token")).Op("+").Lit(": ").Op("+").Id("e").Dot("Message")),
	)
	cmt(f, "Is reports whether target is an *Error with the same token.")
	f.Func().Params(jen.Id("e").Op("*").Id("Error")).Id("Is").Params(jen.Id("target").Error()).Bool().Block(
		jen.List(jen.Id("t"), jen.Id("ok")).Op(":=").Id("target").Assert(jen.Op("*").Id("Error")),
		jen.Return(jen.Id("ok").Op("&&").Id("t").Dot("Token").Op("==").Id("e").Dot("Token")),
	)
	cmt(f, "Retryable reports whether the token allows a retry.")
	f.Func().Params(jen.Id("e").Op("*").Id("Error")).Id("Retryable").Params().Bool().Block(
		jen.List(jen.Id("info"), jen.Id("_")).Op(":=").Id("e").Dot("Token").Dot("Info").Call(),
		jen.Return(jen.Id("info").Dot("Retryable")),
	)
	cmt(f, "NewError returns an error for a token with its default code and status and\nthe given message (the default message when empty).")
	f.Func().Id("NewError").Params(jen.Id("t").Id("Token"), jen.Id("message").String()).Op("*").Id("Error").Block(
		jen.List(jen.Id("info"), jen.Id("_")).Op(":=").Id("t").Dot("Info").Call(),
		jen.If(jen.Id("message").Op("==").Lit("")).Block(jen.Id("message").Op("=").Id("info").Dot("Message")),
		jen.Return(jen.Op("&").Id("Error").Values(jen.Dict{jen.Id("Token"): jen.Id("t"), jen.Id("Code"): jen.Id("info").Dot("Code"), jen.Id("HTTPStatus"): jen.Id("info").Dot("HTTPStatus"), jen.Id("Message"): jen.Id("message")})),
	)
	cmt(f, "Sentinels, one per token, for errors.Is.")
	f.Var().DefsFunc(func(g *jen.Group) {
		for _, e := range errs {
			cmt(g, fmt.Sprintf("Err%s is the error of Token%s, with its default message %q.", e.Name, e.Name, e.Message))
			g.Id("Err"+e.Name).Op("=").Id("NewError").Call(jen.Id("Token"+e.Name), jen.Lit(""))
		}
	})
}

func profileName(p string) string {
	switch p {
	case "jsonrpc":
		return "ProfileJSONRPC"
	case "a2a":
		return "ProfileA2A"
	case "mqtt":
		return "ProfileMQTT"
	case "a2abind":
		return "ProfileA2ABind"
	}
	return "Profile" + camelTag(p)
}
