/*
Package tasklife holds the lifecycle of A2A v1.0 tasks and the responder's
rules for messages that create, retry or resume them.

Three layers, each usable alone:

  - Task is one task's state machine (the generated table
    generated/fsm.TaskStep, schema/fsm/tasklife.json): SUBMITTED, WORKING,
    INPUT_REQUIRED and AUTH_REQUIRED, then COMPLETED, FAILED, CANCELED or
    REJECTED, which are terminal and absorbing. Requesters and responders
    feed it the statuses they see; ClassOf says whether a status lets the
    correlation continue, ends it while the task can be resumed, or ends the
    task.
  - Admit is the responder's decision for an incoming SendMessage, given what
    its store holds: create a task, answer a retry with the task as it stands,
    resume an interrupted task, or refuse with the protocol error.
  - Ledger is an in-memory store that applies those decisions, for tests and
    for agents that need nothing durable.

The rules come from A2A v1.0 (specification/a2a.proto enum TaskState;
§3.1.2, §3.1.5, §3.4.3, §7.6), the A2A-over-MQTT 0.1 profile (Streaming
Reply Mapping; Multi-Turn Conversation Patterns; Error Handling and
Deduplication) and its user story 08 (multi-turn conversation), as
docs/protocol.md §4, §5 and §11 state them, in particular "retry, follow-up
or error?": the responder tells them apart by messageId.

Nothing here does I/O, starts a goroutine or reads a clock: time is passed in.
Errors meant for the wire are *a2a.Error values, identified by token
(errors.Is(err, a2a.ErrInvalidParams), errors.Is(err, a2a.ErrContextExpired)).
*/
package tasklife
