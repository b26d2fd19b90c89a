/*
Package governed signs and checks governed objects: a message whose
metadata carries a signed, purpose-bound, expiring envelope, so that an
agent that was asleep can check at dequeue, against the wall-clock time of
dequeue, that a queued message is authentic, meant for a purpose it serves,
not expired and not a replay (docs/protocol.md §7.6).

The envelope sits in Message.metadata under MetadataKey:

	{"object": "<base64url of the object JSON>", "kid": "<key id>", "sig": "<base64url Ed25519 signature of the object bytes>"}

and the object JSON is

	{"id": "<object id>", "purpose": "<purpose>", "exp": "<RFC 3339 expiry>",
	 "messageId": "<the message's messageId>", "partsSha256": "<hex SHA-256 of the parts>"}

partsSha256 binds the object to the message's content: the SHA-256 of the
message's parts array as the generated encoder writes it (PartsDigest). The
signature covers the object bytes exactly as sent, so no canonical form of
JSON is needed for them.

Sign makes the envelope (a sender); Validator checks it (an agent.Validator
for agent.OfflineConfig): a known key, a valid signature, an allowed
purpose, an expiry still ahead at dequeue, the messageId and the parts
matching. Its replay key is the object id, kept until the object expires.
*/
package governed
