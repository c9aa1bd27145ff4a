//! Asking the user before a tool acts. Manifest tools with `confirm = "…"` and the
//! workspace's write tools (`duet serve --allow-write`) must not act without the user's
//! yes, and they ask in exactly the same way, so the asking lives here once (public, for
//! `duet`'s manifest tools and any other tool that must ask first).
//!
//! Confirmation is a multi round-trip request. The tool's first run answers "input
//! required" with an elicitation form (`{ok: boolean}`) under the key [`KEY`], plus state
//! that records the question; the client asks the user and runs the tool again with the
//! answer (on 2026-07-28 the state travels sealed through the client; on the handshake era
//! the engine asks with a real `elicitation/create` request and keeps the state itself).
//!
//! The tool acts only when the user accepted and ticked `ok`, and only when that answer is
//! to the question as it stands now: an answer that comes without the state of a question
//! this server asked, or one given about something that has changed since (a file edited
//! in between), is no answer, and the question is asked again. One yes acts once: on
//! 2026-07-28 the engine spends the sealed state the answer came with, so the same answer
//! sent again gets the first run's result instead of running the tool again. A client
//! that cannot show a form (it did not declare the elicitation capability) gets a tool
//! error: the tool cannot be confirmed, so it does not act.

use duet::layer::{Elicited, InputRequired, Reply, RequestCx, ToolResult};
use duet::mrtr::missing_capabilities;
use serde::Deserialize;
use serde_json::{Value, json};

/// The key of the confirmation's input request, and of the state that records it.
pub const KEY: &str = "confirm";

// The form a confirmation asks the user to fill in: one box to tick. (Doc comments here
// would become descriptions in the form's schema.)
#[derive(Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

/// A question for the user, which a tool must have answered yes before it acts.
pub struct Question {
    /// The tool, as the refusals name it.
    pub tool: String,
    /// What the user is asked.
    pub message: String,
    /// What the question is about as it is now, e.g. a digest of the file a tool would
    /// change (`Value::Null` when the message says it all). An answer given about another
    /// version does not count.
    pub subject: Value,
    /// What a refusal adds about what was left alone, e.g. "nothing was written to a.txt".
    pub untouched: Option<String>,
}

impl Question {
    /// `Ok` when the user confirmed this very question; otherwise what the tool answers
    /// instead of acting: the question itself (input required), or a tool error that says
    /// why the tool did not act.
    pub fn confirmed<S>(self, cx: &RequestCx<S>) -> Result<(), Reply<ToolResult>> {
        let asked = json!({"message": self.message, "subject": self.subject});
        let answered_now = cx.request_state().and_then(|state| state.get(KEY)) == Some(&asked);
        if answered_now && cx.input(KEY).is_some() {
            let why = match cx.elicited::<Confirm>(KEY) {
                Some(Elicited::Accepted(Confirm { ok: true })) => return Ok(()),
                Some(Elicited::Accepted(Confirm { ok: false })) => "the user did not confirm",
                Some(Elicited::Declined) => "the user declined",
                Some(Elicited::Cancelled) => "the user cancelled",
                None => "the confirmation answer was not understood",
            };
            return Err(self.error(format!("did not run: {why}")));
        }
        let input = InputRequired::new().elicit::<Confirm>(KEY, self.message.clone());
        if missing_capabilities(&input.requests, cx.client_capabilities()).is_some() {
            return Err(self.error(
                "needs the user's confirmation before it runs, and this client cannot ask the user \
                 (it did not declare the elicitation capability)"
                    .into(),
            ));
        }
        Err(Reply::InputRequired(input.request_state(json!({KEY: asked}))))
    }

    fn error(&self, what: String) -> Reply<ToolResult> {
        let untouched = self.untouched.as_ref().map_or_else(String::new, |u| format!("; {u}"));
        ToolResult::error(format!("Tool {} {what}{untouched}", self.tool)).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duet::layer::{ContentKind, Principal};

    fn question(subject: Value) -> Question {
        Question { tool: "t".into(), message: "Go?".into(), subject, untouched: Some("nothing was touched".into()) }
    }

    fn cx(capabilities: Value, answer: Option<Value>, state: Option<Value>) -> RequestCx {
        let inputs = answer.map(|a| json!({KEY: a})).unwrap_or_else(|| json!({}));
        RequestCx::builder(Principal::local())
            .client_capabilities(capabilities)
            .input_responses(inputs.as_object().cloned().unwrap_or_default())
            .state(state)
            .build()
    }

    /// The state the first run attaches to its question.
    fn asked(subject: Value) -> Value {
        let elicit = cx(json!({"elicitation": {}}), None, None);
        match question(subject).confirmed(&elicit) {
            Err(Reply::InputRequired(input)) => input.state.expect("the question carries state"),
            other => panic!("expected the question, got {other:?}"),
        }
    }

    fn error_text(outcome: Result<(), Reply<ToolResult>>) -> String {
        let Err(Reply::Complete(result)) = outcome else { panic!("expected a tool error, got {outcome:?}") };
        assert!(result.is_error);
        let ContentKind::Text { text } = &result.content[0].kind else { panic!("{result:?}") };
        text.clone()
    }

    #[test]
    fn only_an_answer_to_the_question_as_it_stands_counts() {
        let caps = json!({"elicitation": {}});
        let yes = json!({"action": "accept", "content": {"ok": true}});
        let state = asked(json!("v1"));
        assert_eq!(question(json!("v1")).confirmed(&cx(caps.clone(), Some(yes.clone()), Some(state.clone()))), Ok(()));
        // Without the state, or about another version: asked again.
        for (subject, state) in [(json!("v1"), None), (json!("v2"), Some(state))] {
            let outcome = question(subject).confirmed(&cx(caps.clone(), Some(yes.clone()), state));
            assert!(matches!(outcome, Err(Reply::InputRequired(_))), "{outcome:?}");
        }
    }

    #[test]
    fn refusals_and_clients_that_cannot_ask_are_tool_errors() {
        let state = asked(Value::Null);
        let declined = cx(json!({"elicitation": {}}), Some(json!({"action": "decline"})), Some(state));
        assert_eq!(
            error_text(question(Value::Null).confirmed(&declined)),
            "Tool t did not run: the user declined; nothing was touched"
        );
        // A client that can only open URLs cannot show the form either.
        for caps in [json!({}), json!({"elicitation": {"url": {}}})] {
            let message = error_text(question(Value::Null).confirmed(&cx(caps, None, None)));
            assert!(message.contains("cannot ask the user") && message.ends_with("nothing was touched"), "{message}");
        }
    }
}
