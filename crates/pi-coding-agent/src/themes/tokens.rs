//! The colour tokens of a theme, in the order of Pi's theme files, with the slot each colours
//! (text or background) and the token an optional one falls back to; and the built-in `dark`
//! and `light` themes as Pi 1.6.0 resolves them for its HTML export (recorded by running Pi's
//! theme code).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Foreground,
    Background,
}

pub struct Token {
    pub name: &'static str,
    pub slot: Slot,
    pub fallback: Option<&'static str>,
}

pub const TOKENS: [Token; 56] = [
    Token {
        name: "accent",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "border",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "borderAccent",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "borderMuted",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "success",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "error",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "warning",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "muted",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "dim",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "text",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingText",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "scrollbarTrack",
        slot: Slot::Foreground,
        fallback: Some("muted"),
    },
    Token {
        name: "scrollbarThumb",
        slot: Slot::Foreground,
        fallback: Some("text"),
    },
    Token {
        name: "selectedBg",
        slot: Slot::Background,
        fallback: None,
    },
    Token {
        name: "searchMatchBg",
        slot: Slot::Background,
        fallback: Some("selectedBg"),
    },
    Token {
        name: "searchMatchText",
        slot: Slot::Foreground,
        fallback: Some("text"),
    },
    Token {
        name: "userMessageBg",
        slot: Slot::Background,
        fallback: None,
    },
    Token {
        name: "userMessageText",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "customMessageBg",
        slot: Slot::Background,
        fallback: None,
    },
    Token {
        name: "customMessageText",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "customMessageLabel",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "toolPendingBg",
        slot: Slot::Background,
        fallback: None,
    },
    Token {
        name: "toolSuccessBg",
        slot: Slot::Background,
        fallback: None,
    },
    Token {
        name: "toolErrorBg",
        slot: Slot::Background,
        fallback: None,
    },
    Token {
        name: "toolTitle",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "toolOutput",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdHeading",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdLink",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdLinkUrl",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdCode",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdCodeBlock",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdCodeBlockBorder",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdQuote",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdQuoteBorder",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdHr",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "mdListBullet",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "toolDiffAdded",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "toolDiffRemoved",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "toolDiffContext",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxComment",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxKeyword",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxFunction",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxVariable",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxString",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxNumber",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxType",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxOperator",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "syntaxPunctuation",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingOff",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingMinimal",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingLow",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingMedium",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingHigh",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingXhigh",
        slot: Slot::Foreground,
        fallback: None,
    },
    Token {
        name: "thinkingMax",
        slot: Slot::Foreground,
        fallback: Some("thinkingXhigh"),
    },
    Token {
        name: "bashMode",
        slot: Slot::Foreground,
        fallback: None,
    },
];

/// `{"dark": {"colors": {token: hex}, "export": {...}, "light": false}, "light": {...}}`.
pub const BUILTIN_RESOLVED: &str = include_str!("builtin-resolved.json");
