//! Requests for host buffers → buffers reused from earlier requests on the same thread, so a
//! statement run in a loop allocates and zeroes its temporaries once. A buffer handed out
//! holds initialized elements of an earlier use: callers write before they read.

use std::any::Any;
use std::cell::Cell;

use crate::element::Element;
use crate::tensor::memory::advise_huge_pages;

thread_local! {
    /// Buffers given back on this thread, each a `Vec<T>` of some element type.
    static SPARE: Cell<Vec<Box<dyn Any>>> = const { Cell::new(Vec::new()) };
}

/// Spare buffers above this many bytes in all are freed rather than kept: a thread that once
/// ran a huge statement should not hold its memory forever.
const SPARE_BYTES: usize = 64 << 20;

/// Host buffers of given lengths; dropping them hands them back to this thread's spares.
pub(crate) struct Scratch<T: Element> {
    buffers: Vec<Vec<T>>,
}

impl<T: Element> Scratch<T> {
    /// One buffer per length: for each, the smallest spare of this element type that holds it,
    /// else the largest spare grown to it, else a new one.
    pub(crate) fn with_lengths(lengths: impl IntoIterator<Item = usize>) -> Self {
        let mut spare = SPARE.with(Cell::take);
        let buffers = lengths
            .into_iter()
            .map(|len| {
                let capacity = |at: usize| spare[at].downcast_ref::<Vec<T>>().map(Vec::capacity);
                let fits = (0..spare.len()).filter(|&at| capacity(at).is_some_and(|c| c >= len));
                let reused = fits.min_by_key(|&at| capacity(at)).or_else(|| {
                    (0..spare.len())
                        .filter(|&at| capacity(at).is_some())
                        .max_by_key(|&at| capacity(at))
                });
                let mut buffer = match reused {
                    Some(at) => *spare.swap_remove(at).downcast::<Vec<T>>().expect("checked"),
                    None => Vec::new(),
                };
                if buffer.capacity() < len {
                    // A new allocation rather than a grown one, which would copy the old
                    // elements (callers write before they read), advised before its first write.
                    buffer = Vec::with_capacity(len);
                    advise_huge_pages(&buffer);
                }
                buffer.resize(len, T::ZERO);
                buffer
            })
            .collect();
        SPARE.with(|cell| cell.set(spare));
        Scratch { buffers }
    }

    /// The buffers, in the order of their lengths.
    pub(crate) fn buffers(&mut self) -> &mut [Vec<T>] {
        &mut self.buffers
    }

    /// Each buffer's start and length.
    pub(crate) fn starts(&mut self) -> Vec<(*mut T, usize)> {
        self.buffers
            .iter_mut()
            .map(|buffer| (buffer.as_mut_ptr(), buffer.len()))
            .collect()
    }
}

impl<T: Element> Drop for Scratch<T> {
    fn drop(&mut self) {
        let mut spare = SPARE.with(Cell::take);
        let bytes = |buffer: &Vec<T>| buffer.capacity() * std::mem::size_of::<T>();
        for buffer in self.buffers.drain(..) {
            let kept: usize = (spare.iter())
                .filter_map(|b| b.downcast_ref::<Vec<T>>())
                .map(bytes)
                .sum();
            if kept + bytes(&buffer) <= SPARE_BYTES {
                spare.push(Box::new(buffer));
            }
        }
        SPARE.with(|cell| cell.set(spare));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_with_the_requested_lengths() {
        let mut first = Scratch::<f64>::with_lengths([50, 30]);
        first.buffers[0].fill(7.0);
        let address = first.buffers[0].as_ptr();
        drop(first);
        // The 50-element buffer is the only fit for 40 and is reused, truncated.
        let again = Scratch::<f64>::with_lengths([40]);
        assert_eq!(again.buffers[0].len(), 40);
        assert_eq!(again.buffers[0].as_ptr(), address);
        // Another element type never gets an f64 buffer.
        let other = Scratch::<f32>::with_lengths([2]);
        assert_eq!(other.buffers[0], [0.0, 0.0]);
    }
}
