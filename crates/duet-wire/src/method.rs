//! The one table of MCP methods, both directions. Decoding turns a method name into a
//! [`Method`] once, and everything downstream reads that method's row of the table instead
//! of comparing strings: the router asks which eras serve it, the HTTP transport how its
//! answer is streamed and which parameter `Mcp-Name` mirrors, scopes which primitive it
//! uses, stamping whether its 2026 result carries cache hints, the multi round-trip engine
//! whether it may ask for input, session replication whether it changes a session. The
//! methods the server sends (notifications, and the requests a client answers) are rows
//! too, so no method name is spelled anywhere else. A name not in the table is
//! [`Method::Other`]: nothing serves it.

use std::fmt;

/// The kinds of primitive a request can name: what `Mcp-Name` mirrors, what a scope guards,
/// what sealed request state is bound to. A task is named like one (its id is its
/// `Mcp-Name`), but no scope guards it: only the principal that started it reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// A tool, named by `name`.
    Tool,
    /// A prompt, named by `name`.
    Prompt,
    /// A resource, named by `uri`.
    Resource,
    /// A task, named by `taskId`.
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
    /// 2024-11-05 to 2025-11-25 only.
    Handshake,
    /// 2026-07-28 only.
    Modern,
    /// Every revision.
    Both,
    /// None: a method duet does not know.
    Neither,
}

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// The client sends it; duet serves it.
    Client,
    /// duet sends it; the client answers (a request) or takes note (a notification).
    Server,
}

/// One row of the table: what duet knows about a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traits {
    /// The method's name on the wire.
    pub name: &'static str,
    /// Who sends it.
    pub sender: Sender,
    /// Which eras have it.
    pub eras: Eras,
    /// Whether its complete 2026 result carries `ttlMs` and `cacheScope`.
    pub cacheable: bool,
    /// Whether it may answer `input_required` (a multi round-trip request).
    pub asks: bool,
    /// The primitive it uses, named by the parameter [`Primitive::param`].
    pub target: Option<Primitive>,
    /// How its answer travels over Streamable HTTP.
    pub replies: Replies,
    /// Whether handling it may change what a handshake-era session holds (what another
    /// replica serving the session must learn).
    pub changes_session: bool,
}

macro_rules! table {
    ($($(#[$doc:meta])* $variant:ident $name:literal $sender:ident $eras:ident $cacheable:literal $asks:literal $target:ident $replies:ident $changes:literal;)*) => {
        /// A method, as decoded or as sent: one of the table's, or another name.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum Method {
            $(
                #[doc = concat!("`", $name, "`")]
                #[doc = ""]
                $(#[$doc])*
                $variant,
            )*
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
                        sender: Sender::$sender,
                        eras: Eras::$eras,
                        cacheable: $cacheable,
                        asks: $asks,
                        target: table!(@target $target),
                        replies: Replies::$replies,
                        changes_session: $changes,
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
const OTHER: Traits = Traits {
    name: "",
    sender: Sender::Client,
    eras: Eras::Neither,
    cacheable: false,
    asks: false,
    target: None,
    replies: Replies::Once,
    changes_session: false,
};

table! {
    //                        name                          sender eras       cacheable asks target replies changes_session
    Initialize               "initialize"                  Client Handshake  false  false none     Once      true;
    Ping                     "ping"                        Client Handshake  false  false none     Once      false;
    LoggingSetLevel          "logging/setLevel"            Client Handshake  false  false none     Once      true;
    ServerDiscover           "server/discover"             Client Modern     true   false none     Once      false;
    ToolsList                "tools/list"                  Client Both       true   false none     Once      false;
    ToolsCall                "tools/call"                  Client Both       false  true  Tool     MayNotify false;
    ResourcesList            "resources/list"              Client Both       true   false none     Once      false;
    ResourcesTemplatesList   "resources/templates/list"    Client Both       true   false none     Once      false;
    ResourcesRead            "resources/read"              Client Both       true   true  Resource MayNotify false;
    ResourcesSubscribe       "resources/subscribe"         Client Handshake  false  false Resource Once      true;
    ResourcesUnsubscribe     "resources/unsubscribe"       Client Handshake  false  false none     Once      true;
    PromptsList              "prompts/list"                Client Both       true   false none     Once      false;
    PromptsGet               "prompts/get"                 Client Both       false  true  Prompt   MayNotify false;
    CompletionComplete       "completion/complete"         Client Both       false  false none     Once      false;
    SubscriptionsListen      "subscriptions/listen"        Client Modern     false  false none     Streams   false;
    /// The skills extension (SEP-2640): served when the layer serves skills.
    SkillsList               "skills/list"                 Client Both       true   false none     Once      false;
    SkillsGet                "skills/get"                  Client Both       true   false none     Once      false;
    ResourcesDirectoryRead   "resources/directory/read"    Client Both       true   false none     Once      false;
    TasksGet                 "tasks/get"                   Client Both       false  false Task     Once      false;
    TasksUpdate              "tasks/update"                Client Modern     false  false Task     Once      false;
    TasksCancel              "tasks/cancel"                Client Both       false  false Task     Once      false;
    /// Waits for the task to end (2025-11-25), asking the client for the input it needs on
    /// the way.
    TasksResult              "tasks/result"                Client Handshake  false  false Task     MayNotify false;
    TasksList                "tasks/list"                  Client Handshake  false  false none     Once      false;
    /// The client finished the handshake.
    Initialized              "notifications/initialized"   Client Handshake  false  false none     Once      true;
    /// The client gave up on one of its requests.
    Cancelled                "notifications/cancelled"     Client Both       false  false none     Once      false;
    /// The client's roots changed.
    RootsListChanged         "notifications/roots/list_changed" Client Handshake false false none  Once      true;
    // What the server sends: requests its client answers (in the handshake era as requests,
    // in 2026 as the input requests of an `input_required` result), then notifications.
    ElicitationCreate        "elicitation/create"          Server Both       false  false none     Once      false;
    SamplingCreateMessage    "sampling/createMessage"      Server Both       false  false none     Once      false;
    RootsList                "roots/list"                  Server Both       false  false none     Once      false;
    Progress                 "notifications/progress"      Server Both       false  false none     Once      false;
    LogMessage               "notifications/message"       Server Both       false  false none     Once      false;
    ToolsListChanged         "notifications/tools/list_changed" Server Both  false  false none     Once      false;
    PromptsListChanged       "notifications/prompts/list_changed" Server Both false false none     Once      false;
    ResourcesListChanged     "notifications/resources/list_changed" Server Both false false none   Once      false;
    ResourcesUpdated         "notifications/resources/updated" Server Both   false  false none     Once      false;
    /// A followed task's status on a listen stream (2026).
    TaskStatus               "notifications/tasks"         Server Modern     false  false none     Once      false;
    /// A task's status, when the server tells it unasked (2025-11-25).
    LegacyTaskStatus         "notifications/tasks/status"  Server Handshake  false  false none     Once      false;
    SubscriptionsAcknowledged "notifications/subscriptions/acknowledged" Server Modern false false none Once false;
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

    /// Whether the server serves this method in an era: a client's method of that era.
    pub fn served_in(&self, modern: bool) -> bool {
        if self.traits().sender != Sender::Client {
            return false;
        }
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
        assert_eq!((other.as_str(), other.served_in(false), other.served_in(true)), ("tools/Call", false, false));
    }

    #[test]
    fn the_table_says_what_each_method_is() {
        assert!(Method::Initialize.served_in(false) && !Method::Initialize.served_in(true));
        assert!(Method::ServerDiscover.served_in(true) && !Method::ServerDiscover.served_in(false));
        assert!(Method::ToolsCall.traits().asks && !Method::ToolsCall.traits().cacheable);
        assert_eq!(Method::ResourcesRead.traits().target.map(Primitive::param), Some("uri"));
        assert_eq!(Method::SubscriptionsListen.traits().replies, Replies::Streams);
        assert_eq!(Method::TasksGet.traits().target.map(Primitive::param), Some("taskId"));
        assert!(Method::TasksUpdate.served_in(true) && !Method::TasksUpdate.served_in(false));
        assert!(Method::TasksResult.served_in(false) && !Method::TasksResult.served_in(true), "gone in the extension");
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
        let changing: Vec<&str> = KNOWN.iter().filter(|m| m.traits().changes_session).map(Method::as_str).collect();
        assert_eq!(
            changing,
            [
                "initialize",
                "logging/setLevel",
                "resources/subscribe",
                "resources/unsubscribe",
                "notifications/initialized",
                "notifications/roots/list_changed"
            ]
        );
    }

    #[test]
    fn what_the_server_sends_is_served_in_no_era() {
        for method in KNOWN.iter().filter(|m| m.traits().sender == Sender::Server) {
            assert!(!method.served_in(false) && !method.served_in(true), "{method}");
        }
        assert_eq!(Method::parse("roots/list"), Method::RootsList);
        assert!(Method::RootsListChanged.served_in(false));
    }
}
