//! Server-sent events, as the providers stream them: `event:` and `data:`
//! lines, an empty line ending each event.

/// One event.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Event {
    /// The `event:` name, if any.
    pub(crate) name: Option<String>,
    /// The `data:` lines, joined with newlines.
    pub(crate) data: String,
}

/// Splits bytes into events as they arrive (a line may span chunks).
#[derive(Debug, Default)]
pub(crate) struct Parser {
    buffer: Vec<u8>,
    current: Event,
    has_data: bool,
}

/// The longest line kept: a provider's line is one JSON chunk.
const MAX_LINE: usize = 16 * 1024 * 1024;

impl Parser {
    /// Feed a chunk; the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(at) = self.buffer.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=at).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), &mut events);
        }
        if self.buffer.len() > MAX_LINE {
            self.buffer.clear();
        }
        events
    }

    /// The end of the stream: an event not yet ended by an empty line.
    pub(crate) fn finish(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        if !self.buffer.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
            self.line(&line, &mut events);
        }
        self.dispatch(&mut events);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line.starts_with(':') {
            return; // a comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.current.name = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, events: &mut Vec<Event>) {
        if self.has_data || self.current.name.is_some() {
            events.push(std::mem::take(&mut self.current));
        }
        self.current = Event::default();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks() {
        let mut parser = Parser::default();
        let mut events = parser.push(b"event: a\ndata: {\"x\"");
        assert!(events.is_empty());
        events.extend(parser.push(b": 1}\r\n\r\n: keep-alive\n\ndata: one\ndata: two\n\n"));
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                Event { name: Some("a".into()), data: "{\"x\": 1}".into() },
                Event { name: None, data: "one\ntwo".into() },
            ]
        );
    }
}
