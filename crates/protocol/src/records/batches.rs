//! The batches of a `records` field, one after another: read-only as [`RecordBatch`]es
//! ([`Batches`]) or mutable as [`RecordBatchMut`]s ([`BatchesMut`]), with a trailing partial
//! batch told apart from corruption.

use bytes::Bytes;

use super::batch::{check_header, frame, RecordBatch};
use super::batch_mut::RecordBatchMut;
use super::RecordBatchError;

/// The batches of a `records` field, in order, each a zero-copy [`RecordBatch`].
///
/// A buffer that ends inside a batch yields [`RecordBatchError::PartialBatch`] as its last
/// item (a fetch response may be cut like that), distinct from the errors that mean
/// corruption. Iteration stops after any error: without a sound length the next batch cannot
/// be found.
#[derive(Debug, Clone)]
pub struct Batches {
    rest: Bytes,
    position: usize,
    done: bool,
}

impl Batches {
    /// Iterates over the batches in `records`.
    pub fn new(records: Bytes) -> Batches {
        Batches {
            rest: records,
            position: 0,
            done: false,
        }
    }

    /// How many bytes the complete batches yielded so far take: where a caller truncates to
    /// drop a trailing partial batch.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The bytes not yet yielded.
    pub fn remaining(&self) -> &Bytes {
        &self.rest
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, RecordBatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        let result = frame(&self.rest, self.position)
            .and_then(|size| RecordBatch::from_frame(self.rest.slice(..size), self.position));
        match result {
            Ok(batch) => {
                let size = batch.size_in_bytes();
                self.rest = self.rest.slice(size..);
                self.position += size;
                Some(Ok(batch))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for Batches {}

/// The batches of a mutable buffer (say, a produce request's records copied into a
/// `BytesMut`), each as a [`RecordBatchMut`], with the same framing rules as [`Batches`].
#[derive(Debug)]
pub struct BatchesMut<'a> {
    rest: &'a mut [u8],
    position: usize,
    done: bool,
}

impl<'a> BatchesMut<'a> {
    /// Iterates over the batches in `records`.
    pub fn new(records: &'a mut [u8]) -> BatchesMut<'a> {
        BatchesMut {
            rest: records,
            position: 0,
            done: false,
        }
    }

    /// How many bytes the complete batches yielded so far take.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl<'a> Iterator for BatchesMut<'a> {
    type Item = Result<RecordBatchMut<'a>, RecordBatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        let position = self.position;
        let checked = frame(self.rest, position).and_then(|size| {
            let batch = self.rest.get(..size).unwrap_or_default();
            check_header(batch, position).map(|_| size)
        });
        match checked {
            Ok(size) => {
                let (batch, rest) = std::mem::take(&mut self.rest).split_at_mut(size);
                self.rest = rest;
                self.position += size;
                Some(Ok(RecordBatchMut {
                    buf: batch,
                    position,
                }))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for BatchesMut<'_> {}
