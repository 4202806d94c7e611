//! Steering and follow-up queues.

use pi_protocol::QueueMode;
use pi_protocol::message::AgentMessage;

/// Messages waiting for the loop to pick them up at a drain point.
#[derive(Debug, Clone)]
pub struct PendingQueue {
    messages: Vec<AgentMessage>,
    pub mode: QueueMode,
}

impl PendingQueue {
    pub fn new(mode: QueueMode) -> PendingQueue {
        PendingQueue {
            messages: Vec::new(),
            mode,
        }
    }

    pub fn enqueue(&mut self, message: AgentMessage) {
        self.messages.push(message);
    }

    pub fn has_items(&self) -> bool {
        !self.messages.is_empty()
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Removes what one drain point delivers: the oldest message, or all of them in `all` mode.
    pub fn drain(&mut self) -> Vec<AgentMessage> {
        match self.mode {
            QueueMode::All => std::mem::take(&mut self.messages),
            QueueMode::OneAtATime if self.messages.is_empty() => Vec::new(),
            QueueMode::OneAtATime => vec![self.messages.remove(0)],
        }
    }

    pub fn clear(&mut self) {
        self.messages.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::content::UserContent;
    use pi_protocol::message::UserMessage;

    fn msg(t: &str) -> AgentMessage {
        AgentMessage::User(UserMessage::new(UserContent::text(t), 0))
    }

    #[test]
    fn one_at_a_time_drains_oldest_first_and_all_drains_everything() {
        let mut q = PendingQueue::new(QueueMode::OneAtATime);
        q.enqueue(msg("a"));
        q.enqueue(msg("b"));
        assert_eq!(q.drain(), vec![msg("a")]);
        q.mode = QueueMode::All;
        q.enqueue(msg("c"));
        assert_eq!(q.drain(), vec![msg("b"), msg("c")]);
        assert!(q.drain().is_empty());
    }
}
