//! A handler's answer: complete, or "ask the client first" (a multi round-trip request).
//! Both eras share this one shape, so a handler is written once.

use super::schema_for;
use duet_wire::method::Method;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};

/// Complete, or input required from the client before the request can finish.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<T> {
    /// The answer.
    Complete(T),
    /// What the handler needs from the client first; it runs again with the answers.
    InputRequired(InputRequired),
}

impl<T> From<T> for Reply<T> {
    fn from(value: T) -> Self {
        Reply::Complete(value)
    }
}

/// What the handler needs from the client, each request under a key of its choosing,
/// plus the handler's own state to carry into its next run. Read the answers with
/// `RequestCx::elicited` or `RequestCx::input`, and the state with
/// `RequestCx::request_state`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    /// `{method, params}` objects by key.
    pub requests: Map<String, Value>,
    /// The handler's own state, handed back to its next run.
    pub state: Option<Value>,
}

impl InputRequired {
    /// Nothing asked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Any request kind: `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        self.requests.insert(key.into(), json!({"method": method, "params": params}));
        self
    }

    /// Asks the user to fill in a form whose fields are those of `T` (a struct of strings,
    /// numbers, booleans and enums); read the answer with `cx.elicited::<T>(key)`.
    pub fn elicit<T: JsonSchema>(self, key: impl Into<String>, message: impl Into<String>) -> Self {
        self.elicit_schema(key, message, schema_for::<T>())
    }

    /// Asks the user to fill in a form described by `requested_schema` (a flat object
    /// schema).
    pub fn elicit_schema(self, key: impl Into<String>, message: impl Into<String>, requested_schema: Value) -> Self {
        let params = json!({"mode": "form", "message": message.into(), "requestedSchema": requested_schema});
        self.request(key, Method::ElicitationCreate.as_str(), params)
    }

    /// Asks the user to visit a URL (for anything that must not pass through the client).
    pub fn elicit_url(self, key: impl Into<String>, message: impl Into<String>, url: impl Into<String>) -> Self {
        let params = json!({"mode": "url", "message": message.into(), "url": url.into()});
        self.request(key, Method::ElicitationCreate.as_str(), params)
    }

    /// Asks the client's model for a completion (`sampling/createMessage` params).
    pub fn sample(self, key: impl Into<String>, params: Value) -> Self {
        self.request(key, Method::SamplingCreateMessage.as_str(), params)
    }

    /// Asks for the client's roots.
    pub fn roots(self, key: impl Into<String>) -> Self {
        self.request(key, Method::RootsList.as_str(), json!({}))
    }

    /// State the handler gets back on its next run (sealed when it travels via the client).
    pub fn request_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Confirm {
        /// Go ahead?
        ok: bool,
    }

    #[test]
    fn a_typed_form_asks_for_the_fields_of_its_type() {
        let asked = InputRequired::new().elicit::<Confirm>("confirm", "Sure?");
        let params = &asked.requests["confirm"]["params"];
        assert_eq!((&params["mode"], &params["message"]), (&json!("form"), &json!("Sure?")));
        let schema = &params["requestedSchema"];
        assert_eq!((&schema["type"], &schema["required"]), (&json!("object"), &json!(["ok"])));
        assert_eq!(schema["properties"]["ok"]["type"], "boolean");
    }
}
