//! Tool-name rules per provider, and the reversible respelling of names a
//! provider cannot take (`server.tool` ↔ `server__tool`).

use super::Fnv;

/// What to do with a name the provider cannot take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum NameStyle {
    /// Refuse to render, naming the tool and the rule (the default).
    #[default]
    Reject,
    /// Send a spelling the provider accepts (`.` becomes `__`, other
    /// characters `_`, long names are shortened with a hash) and map the
    /// model's calls back with [`CallMapping::apply`](super::CallMapping::apply).
    Respell,
}

/// A provider's rule for tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NameRule {
    /// The rule as a regular expression, for messages.
    pub pattern: &'static str,
    /// Longest name, in characters.
    pub max_len: usize,
    /// Characters allowed besides ASCII letters and digits.
    pub punctuation: &'static str,
    /// Whether the first character must be a letter or `_`.
    pub letter_first: bool,
}

impl NameRule {
    /// OpenAI (Chat and Responses), Bedrock, Mistral, Ollama.
    pub const OPENAI: NameRule =
        NameRule { pattern: "^[a-zA-Z0-9_-]{1,64}$", max_len: 64, punctuation: "_-", letter_first: false };
    /// Anthropic Messages.
    pub const ANTHROPIC: NameRule =
        NameRule { pattern: "^[a-zA-Z0-9_-]{1,128}$", max_len: 128, punctuation: "_-", letter_first: false };
    /// Google Gemini.
    pub const GEMINI: NameRule = NameRule {
        pattern: "^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$",
        max_len: 128,
        punctuation: "_.:-",
        letter_first: true,
    };
    /// MCP (a SHOULD in the specification).
    pub const MCP: NameRule =
        NameRule { pattern: "^[a-zA-Z0-9_.-]{1,128}$", max_len: 128, punctuation: "_.-", letter_first: false };

    fn allows(&self, c: char) -> bool {
        c.is_ascii_alphanumeric() || self.punctuation.contains(c)
    }

    /// Check a name; the error says which part of the rule it breaks.
    ///
    /// ```
    /// use toolreg::provider::NameRule;
    /// assert!(NameRule::GEMINI.check("server.tool").is_ok());
    /// assert!(NameRule::OPENAI.check("server.tool").unwrap_err().contains("'.'"));
    /// ```
    pub fn check(&self, name: &str) -> Result<(), String> {
        if name.is_empty() {
            return Err("the name is empty".to_owned());
        }
        // Characters are counted only when the bytes are over the limit: a
        // name no longer in bytes is within it.
        if name.len() > self.max_len {
            let len = name.chars().count();
            if len > self.max_len {
                return Err(format!("the name has {len} characters, more than {}", self.max_len));
            }
        }
        if let Some(c) = name.chars().find(|c| !self.allows(*c)) {
            return Err(format!("character {c:?} is not allowed"));
        }
        if self.letter_first && !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return Err("the name must start with a letter or `_`".to_owned());
        }
        Ok(())
    }

    /// A spelling of `name` that follows this rule: `.` becomes `__`, any
    /// other character the rule refuses becomes `_`, a name that must start
    /// with a letter gets a leading `_`, and a name too long is cut and ends
    /// with a hash of the whole name, so different names stay different.
    ///
    /// ```
    /// use toolreg::provider::NameRule;
    /// assert_eq!(NameRule::OPENAI.respell("server.tool"), "server__tool");
    /// assert_eq!(NameRule::GEMINI.respell("1st/tool"), "_1st_tool");
    /// ```
    pub fn respell(&self, name: &str) -> String {
        let mut out = String::with_capacity(name.len() + 2);
        for c in name.chars() {
            if self.allows(c) {
                out.push(c);
            } else if c == '.' {
                out.push_str("__");
            } else {
                out.push('_');
            }
        }
        if out.is_empty() || (self.letter_first && !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')) {
            out.insert(0, '_');
        }
        if out.chars().count() > self.max_len {
            let mut h = Fnv::new();
            h.write(name.as_bytes());
            let keep: String = out.chars().take(self.max_len - 9).collect();
            out = format!("{keep}_{:08x}", h.finish() as u32);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::NameRule;

    #[test]
    fn length_is_counted_in_characters() {
        let rule = NameRule::OPENAI;
        assert_eq!(rule.check(""), Err("the name is empty".to_owned()));
        assert_eq!(rule.check(&"a".repeat(64)), Ok(()));
        assert_eq!(rule.check(&"a".repeat(65)), Err("the name has 65 characters, more than 64".to_owned()));
        // 64 characters in 128 bytes: within the length, refused for its characters.
        assert_eq!(rule.check(&"é".repeat(64)), Err("character 'é' is not allowed".to_owned()));
        assert_eq!(rule.check(&"é".repeat(65)), Err("the name has 65 characters, more than 64".to_owned()));
    }
}
