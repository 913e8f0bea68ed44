//! Requests for host buffers → buffers reused from earlier requests on the same thread, so a
//! statement run in a loop allocates and zeroes its temporaries once, each of 4 KiB or more
//! starting on a cache line as a new tensor does. A buffer handed out holds initialized
//! elements of an earlier use: callers write before they read.

use std::any::Any;
use std::cell::Cell;

use crate::element::Element;
use crate::tensor::memory::{advise_huge_pages, line_padding, line_start};

thread_local! {
    /// Buffers given back on this thread, each a `Vec<T>` of some element type.
    static SPARE: Cell<Vec<Box<dyn Any>>> = const { Cell::new(Vec::new()) };
}

/// Spare buffers above this many bytes in all are freed rather than kept: a thread that once
/// ran a huge statement should not hold its memory forever.
const SPARE_BYTES: usize = 64 << 20;

/// Host buffers of given lengths; dropping them hands them back to this thread's spares.
/// Buffer `b` is `buffers[b][starts[b]..]`: the elements before `starts[b]` put it on a cache
/// line (`memory::line_padding`).
pub(crate) struct Scratch<T: Element> {
    buffers: Vec<Vec<T>>,
    starts: Vec<usize>,
}

impl<T: Element> Scratch<T> {
    /// One buffer per length: for each, the smallest spare of this element type that holds it,
    /// else the largest spare grown to it, else a new one.
    pub(crate) fn with_lengths(lengths: impl IntoIterator<Item = usize>) -> Self {
        let mut spare = SPARE.with(Cell::take);
        let mut starts = Vec::new();
        let buffers = lengths
            .into_iter()
            .map(|len| {
                let padding = line_padding::<T>(len);
                let len = len.saturating_add(padding);
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
                // At most `padding` in, so `start` plus the requested length fits in `len`.
                let start = line_start(buffer.as_ptr(), padding);
                buffer.resize(len - padding + start, T::ZERO);
                starts.push(start);
                buffer
            })
            .collect();
        SPARE.with(|cell| cell.set(spare));
        Scratch { buffers, starts }
    }

    /// The `K` buffers, in the order of their lengths.
    ///
    /// # Panics
    /// If `K` is not the number of lengths requested (a bug in the caller).
    pub(crate) fn buffers<const K: usize>(&mut self) -> [&mut [T]; K] {
        assert_eq!(
            self.buffers.len(),
            K,
            "tensor-dsl bug: another number of scratch buffers requested"
        );
        let mut each = (self.buffers.iter_mut())
            .zip(&self.starts)
            .map(|(buffer, &start)| &mut buffer[start..]);
        std::array::from_fn(|_| each.next().expect("counted above"))
    }

    /// Each buffer's start and length.
    pub(crate) fn starts(&mut self) -> Vec<(*mut T, usize)> {
        (self.buffers.iter_mut())
            .zip(&self.starts)
            .map(|(buffer, &start)| {
                (
                    buffer.as_mut_ptr().wrapping_add(start),
                    buffer.len() - start,
                )
            })
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
        let [fifty, _] = first.buffers();
        fifty.fill(7.0);
        let address = fifty.as_ptr();
        drop(first);
        // The 50-element buffer is the only fit for 40 and is reused, truncated.
        let mut again = Scratch::<f64>::with_lengths([40]);
        let [forty] = again.buffers();
        assert_eq!(forty.len(), 40);
        assert_eq!(forty.as_ptr(), address);
        // Another element type never gets an f64 buffer.
        let mut other = Scratch::<f32>::with_lengths([2]);
        let [two] = other.buffers();
        assert_eq!(two, [0.0, 0.0]);
        // 4 KiB or more: on a cache line, first made or reused, the length as requested.
        for len in [1024, 5000, 1024, 3000] {
            let mut large = Scratch::<f32>::with_lengths([len, 7]);
            let [buffer, small] = large.buffers();
            assert_eq!((buffer.len(), small.len()), (len, 7));
            assert!((buffer.as_ptr() as usize).is_multiple_of(64), "{len}");
            let starts = large.starts();
            assert_eq!(starts[0].1, len);
            assert!((starts[0].0 as usize).is_multiple_of(64));
        }
    }
}
