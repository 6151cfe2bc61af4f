//! Server-sent events, as the providers stream them: `event:` and `data:`
//! lines, an empty line ending each event.

use crate::model::LlmError;

/// One event.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Event {
    /// The `event:` name, if any.
    pub(crate) name: Option<String>,
    /// The `data:` lines, joined with newlines.
    pub(crate) data: String,
}

/// Splits bytes into events as they arrive (a line may span chunks).
///
/// Each byte is looked at once: a chunk is scanned for line ends, and only
/// the unfinished tail of a line is kept, so parsing is linear in the
/// stream's length however long its lines are. A line, or an event's
/// data, longer than the limit is [`LlmError::TooLarge`].
#[derive(Debug)]
pub(crate) struct Parser {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    current: Event,
    has_data: bool,
    limit: usize,
}

impl Parser {
    /// A parser that refuses lines and events over `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Parser { partial: Vec::new(), current: Event::default(), has_data: false, limit }
    }

    /// Feed a chunk; the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<Event>, LlmError> {
        let mut events = Vec::new();
        let mut rest = chunk;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(at);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line_bytes(head, &mut events)?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(head);
                self.line_bytes(&line, &mut events)?;
            }
        }
        if self.partial.len().saturating_add(rest.len()) > self.limit {
            return Err(LlmError::TooLarge { limit: self.limit });
        }
        self.partial.extend_from_slice(rest);
        Ok(events)
    }

    /// The end of the stream: an event not yet ended by an empty line.
    pub(crate) fn finish(&mut self) -> Result<Vec<Event>, LlmError> {
        let mut events = Vec::new();
        let line = std::mem::take(&mut self.partial);
        if !line.is_empty() {
            self.line_bytes(&line, &mut events)?;
        }
        self.dispatch(&mut events);
        Ok(events)
    }

    fn line_bytes(&mut self, line: &[u8], events: &mut Vec<Event>) -> Result<(), LlmError> {
        if line.len() > self.limit {
            return Err(LlmError::TooLarge { limit: self.limit });
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        self.line(&String::from_utf8_lossy(line), events);
        if self.current.data.len() > self.limit {
            return Err(LlmError::TooLarge { limit: self.limit });
        }
        Ok(())
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
        let mut parser = Parser::new(1024);
        let mut events = parser.push(b"event: a\ndata: {\"x\"").unwrap();
        assert!(events.is_empty());
        events.extend(parser.push(b": 1}\r\n\r\n: keep-alive\n\ndata: one\ndata: two\n\n").unwrap());
        events.extend(parser.finish().unwrap());
        assert_eq!(
            events,
            vec![
                Event { name: Some("a".into()), data: "{\"x\": 1}".into() },
                Event { name: None, data: "one\ntwo".into() },
            ]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_not_dropped() {
        let mut parser = Parser::new(16);
        assert_eq!(parser.push(b"data: 0123456789").unwrap(), vec![]);
        assert_eq!(parser.push(b"abcdef"), Err(LlmError::TooLarge { limit: 16 }));
        // One event's data, over several short lines, is bounded too.
        let mut parser = Parser::new(16);
        assert_eq!(parser.push(b"data: 0123456789\ndata: 0123456789\n"), Err(LlmError::TooLarge { limit: 16 }));
    }

    /// A long line arriving in small chunks is kept whole. (That this is
    /// linear in the line's length is structural — each chunk is scanned
    /// once, only the unfinished tail is kept — and not timed here: timing
    /// assertions fail on a busy machine.)
    #[test]
    fn long_lines_in_small_chunks_arrive_whole() {
        let mut parser = Parser::new(usize::MAX);
        let chunk = [b'x'; 256];
        parser.push(b"data: ").unwrap();
        for _ in 0..(4 << 20) / chunk.len() {
            assert!(parser.push(&chunk).unwrap().is_empty());
        }
        let events = parser.push(b"\n\n").unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data.len(), 4 << 20);
    }
}
