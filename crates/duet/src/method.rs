//! The one table of MCP methods. Decoding turns a method name into a [`Method`] once, and
//! everything downstream reads that method's row of the table instead of comparing strings:
//! the router asks which eras have it, the HTTP transport how its answer is streamed and
//! which parameter `Mcp-Name` mirrors, scopes which primitive it uses, stamping whether its
//! 2026 result carries cache hints, the multi round-trip engine whether it may ask for input.
//! A method not in the table is [`Method::Other`]: no era has it.

use std::fmt;

/// The kinds of primitive a request can name: what `Mcp-Name` mirrors, what a scope guards,
/// what sealed request state is bound to. A task is named like one (its id is its
/// `Mcp-Name`), but no scope guards it: only the principal that started it reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    Tool,
    Prompt,
    Resource,
    Task,
}

impl Primitive {
    /// `Tool`, `Prompt` or `Resource`, as messages start.
    pub fn label(self) -> &'static str {
        match self {
            Primitive::Tool => "Tool",
            Primitive::Prompt => "Prompt",
            Primitive::Resource => "Resource",
            Primitive::Task => "Task",
        }
    }

    /// The request parameter that names a primitive of this kind.
    pub fn param(self) -> &'static str {
        match self {
            Primitive::Tool | Primitive::Prompt => "name",
            Primitive::Resource => "uri",
            Primitive::Task => "taskId",
        }
    }
}

/// How the answer to a request travels over Streamable HTTP, least streaming first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Replies {
    /// One result, no notifications on the way: JSON unless the client accepts only SSE.
    Once,
    /// Progress and log notifications may come first: SSE when the client accepts it.
    MayNotify,
    /// A stream that lasts (`subscriptions/listen`): always SSE.
    Streams,
}

/// Which eras have a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    Handshake,
    Modern,
    Both,
    Neither,
}

/// One row of the table: what duet knows about a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traits {
    pub name: &'static str,
    pub eras: Eras,
    /// Whether its complete 2026 result carries `ttlMs` and `cacheScope`.
    pub cacheable: bool,
    /// Whether it may answer `input_required` (a multi round-trip request).
    pub asks: bool,
    /// The primitive it uses, named by the parameter [`Primitive::param`].
    pub target: Option<Primitive>,
    pub replies: Replies,
}

macro_rules! table {
    ($($(#[$doc:meta])* $variant:ident $name:literal $eras:ident $cacheable:literal $asks:literal $target:ident $replies:ident;)*) => {
        /// A method a client sends, as decoded: one of the table's, or another name.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[$doc])* $variant,)*
            /// A method duet does not know; no era has it.
            Other(Box<str>),
        }

        /// Every known method, in the table's order.
        const KNOWN: &[Method] = &[$(Method::$variant),*];

        impl Method {
            /// This method's row of the table.
            pub fn traits(&self) -> &'static Traits {
                match self {
                    $(Method::$variant => &Traits {
                        name: $name,
                        eras: Eras::$eras,
                        cacheable: $cacheable,
                        asks: $asks,
                        target: table!(@target $target),
                        replies: Replies::$replies,
                    },)*
                    Method::Other(_) => &OTHER,
                }
            }
        }
    };
    (@target none) => { None };
    (@target $kind:ident) => { Some(Primitive::$kind) };
}

/// The row of a method duet does not know.
const OTHER: Traits =
    Traits { name: "", eras: Eras::Neither, cacheable: false, asks: false, target: None, replies: Replies::Once };

table! {
    //                        name                          eras       cacheable asks target replies
    Initialize               "initialize"                  Handshake  false  false none     Once;
    Ping                     "ping"                        Handshake  false  false none     Once;
    LoggingSetLevel          "logging/setLevel"            Handshake  false  false none     Once;
    ServerDiscover           "server/discover"             Modern     true   false none     Once;
    ToolsList                "tools/list"                  Both       true   false none     Once;
    ToolsCall                "tools/call"                  Both       false  true  Tool     MayNotify;
    ResourcesList            "resources/list"              Both       true   false none     Once;
    ResourcesTemplatesList   "resources/templates/list"    Both       true   false none     Once;
    ResourcesRead            "resources/read"              Both       true   true  Resource MayNotify;
    ResourcesSubscribe       "resources/subscribe"         Handshake  false  false Resource Once;
    ResourcesUnsubscribe     "resources/unsubscribe"       Handshake  false  false none     Once;
    PromptsList              "prompts/list"                Both       true   false none     Once;
    PromptsGet               "prompts/get"                 Both       false  true  Prompt   MayNotify;
    CompletionComplete       "completion/complete"         Both       false  false none     Once;
    SubscriptionsListen      "subscriptions/listen"        Modern     false  false none     Streams;
    /// The skills extension (SEP-2640): served when the layer serves skills.
    SkillsList               "skills/list"                 Both       true   false none     Once;
    SkillsGet                "skills/get"                  Both       true   false none     Once;
    ResourcesDirectoryRead   "resources/directory/read"    Both       true   false none     Once;
    TasksGet                 "tasks/get"                   Both       false  false Task     Once;
    TasksUpdate              "tasks/update"                Modern     false  false Task     Once;
    TasksCancel              "tasks/cancel"                Both       false  false Task     Once;
    /// `tasks/result` (2025-11-25): waits for the task to end, asking the client for the
    /// input it needs on the way.
    TasksResult              "tasks/result"                Handshake  false  false Task     MayNotify;
    TasksList                "tasks/list"                  Handshake  false  false none     Once;
    /// `notifications/initialized`: the client finished the handshake.
    Initialized              "notifications/initialized"   Handshake  false  false none     Once;
    /// `notifications/cancelled`: the client gave up on one of its requests.
    Cancelled                "notifications/cancelled"     Both       false  false none     Once;
    /// `notifications/roots/list_changed`: the client's roots changed.
    RootsListChanged         "notifications/roots/list_changed" Handshake false false none Once;
}

impl Method {
    /// The method a name stands for.
    pub fn parse(name: &str) -> Method {
        KNOWN.iter().find(|m| m.traits().name == name).cloned().unwrap_or_else(|| Method::Other(name.into()))
    }

    /// The name as the client sent it.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Other(name) => name,
            known => known.traits().name,
        }
    }

    /// Whether an era has this method.
    pub fn in_era(&self, modern: bool) -> bool {
        match self.traits().eras {
            Eras::Both => true,
            Eras::Handshake => !modern,
            Eras::Modern => modern,
            Eras::Neither => false,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_kept() {
        for method in KNOWN {
            assert_eq!(&Method::parse(method.as_str()), method);
        }
        assert_eq!(Method::parse("tools/call"), Method::ToolsCall);
        let other = Method::parse("tools/Call");
        assert_eq!((other.as_str(), other.in_era(false), other.in_era(true)), ("tools/Call", false, false));
    }

    #[test]
    fn the_table_says_what_each_method_is() {
        assert!(Method::Initialize.in_era(false) && !Method::Initialize.in_era(true));
        assert!(Method::ServerDiscover.in_era(true) && !Method::ServerDiscover.in_era(false));
        assert!(Method::ToolsCall.traits().asks && !Method::ToolsCall.traits().cacheable);
        assert_eq!(Method::ResourcesRead.traits().target.map(Primitive::param), Some("uri"));
        assert_eq!(Method::SubscriptionsListen.traits().replies, Replies::Streams);
        assert_eq!(Method::TasksGet.traits().target.map(Primitive::param), Some("taskId"));
        assert!(Method::TasksUpdate.in_era(true) && !Method::TasksUpdate.in_era(false));
        assert!(Method::TasksResult.in_era(false) && !Method::TasksResult.in_era(true), "gone in the extension");
        let cacheable: Vec<&str> = KNOWN.iter().filter(|m| m.traits().cacheable).map(Method::as_str).collect();
        assert_eq!(
            cacheable,
            [
                "server/discover",
                "tools/list",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "prompts/list",
                "skills/list",
                "skills/get",
                "resources/directory/read"
            ]
        );
        let asking: Vec<&str> = KNOWN.iter().filter(|m| m.traits().asks).map(Method::as_str).collect();
        assert_eq!(asking, ["tools/call", "resources/read", "prompts/get"]);
    }
}
