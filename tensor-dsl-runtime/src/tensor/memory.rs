//! Element counts → zero-filled buffers for owned tensors, and large buffers → the same
//! buffers with the kernel asked to back them with huge pages (advice only: no element,
//! address or length changes); and the host → the size of its last-level cache, read once.
//!
//! A small buffer is taken from the allocator's fast path and filled: glibc's `calloc`, which a
//! zeroed `Vec` asks for, skips the per-thread cache of freed chunks, so a statement that makes
//! a 3 × 3 × 3 result in a loop paid about 230 ns per allocation (`malloc` and a fill: 30).
//! A large one stays `calloc`'s, whose fresh pages come zeroed from the kernel.
//!
//! A sum or a copy over tensors of many megabytes streams through memory, and with 4 KiB pages
//! every 4 KiB read misses the TLB; with 2 MiB pages the reads run faster (a dot product of two
//! 64 MiB f32 tensors on a 2-core AMD EPYC: about 12 GB/s on small pages, 17 GB/s on huge ones).
//! numpy asks the same for its arrays of 4 MiB or more. Linux only, where transparent huge
//! pages are often enabled only for memory that asks for them (`madvise`).

use crate::element::Element;

/// Buffers of at least this many bytes are advised (numpy's threshold): each holds at least
/// one whole 2 MiB page.
const HUGE_PAGES_FROM: usize = 4 << 20;

/// The size of a huge page on x86-64 and on 4 KiB-page ARM: the advised range starts and ends
/// on its multiples, which are page boundaries for any base page size that divides it.
const HUGE_PAGE: usize = 2 << 20;

/// Buffers of fewer bytes than this are filled with zeros here (see the module's note); larger
/// ones are zeroed by the allocator.
const FILLED_BELOW: usize = 4096;

/// Buffers of at least this many bytes start their elements on a cache line ([`line_padding`]):
/// a large `Vec`'s elements start wherever the allocator puts them (glibc: 16 bytes past a
/// line), and copies that transpose into or out of such a tensor pay for the lines its rows
/// then straddle (`c[k, j, i] = a[i, j, k]` over 256³ `f32` tensors: each block loading two
/// halves of a source line, each target row's first 12 and last 4 elements stored apart from
/// its whole lines). Smaller ones are not padded: they sit in the caches, and a small tensor
/// made in a loop should not pay for the bytes.
const LINE_ALIGNED_FROM: usize = 4096;

pub(crate) use crate::element::LINE;

/// The bytes of a page of memory, at least (4 KiB on x86-64 and most ARM systems): cache sets
/// repeat at a multiple of it, so rows a whole number of pages apart evict each other.
pub(crate) const PAGE: usize = 4096;

/// How many elements of `T` a new buffer for `count` of them takes in front of them, so they can
/// start on a cache line ([`line_start`]): one line's worth less one, for `count` elements of at
/// least [`LINE_ALIGNED_FROM`] bytes in all and a size that divides a line; else none.
pub(crate) fn line_padding<T>(count: usize) -> usize {
    let size = size_of::<T>();
    let whole = size != 0 && LINE.is_multiple_of(size);
    if whole && count.saturating_mul(size) >= LINE_ALIGNED_FROM {
        LINE / size - 1
    } else {
        0
    }
}

/// Where in a buffer allocated from `first` (holding `padding` more elements than the tensor's,
/// from [`line_padding`]) the tensor's elements start: the first element on a cache line, at
/// most `padding` in (0 where there is none within reach, as for a buffer not aligned to
/// `T`'s size, which no allocation is, or where `align_offset` declines to say, as it may).
pub(crate) fn line_start<T>(first: *const T, padding: usize) -> usize {
    let offset = first.align_offset(LINE);
    if offset <= padding {
        offset
    } else {
        0
    }
}

/// An empty buffer with room for `count` elements of `T` and the padding in front of them
/// ([`line_padding`]), asked for huge pages before its first write, and where in it the
/// elements start ([`line_start`]): the caller pushes that many elements of padding, then the
/// `count`, without growing it.
pub(crate) fn line_buffer<T>(count: usize) -> (Vec<T>, usize) {
    let padding = line_padding::<T>(count);
    let data = Vec::with_capacity(count.saturating_add(padding));
    advise_huge_pages(&data);
    let start = line_start(data.as_ptr(), padding);
    (data, start)
}

/// A buffer of `count` zeros.
pub(crate) fn zeroed<T: Element>(count: usize) -> Vec<T> {
    if count.saturating_mul(size_of::<T>()) < FILLED_BELOW {
        let mut data = Vec::with_capacity(count);
        data.resize(count, T::ZERO);
        data
    } else {
        vec![T::ZERO; count]
    }
}

/// Asks the kernel to back the whole 2 MiB pages of `buffer`'s allocation (its capacity, not
/// only its length) with huge pages, if it holds at least [`HUGE_PAGES_FROM`] bytes. Called
/// before the elements are first written where the caller can (pages already written may be
/// moved to huge ones later by the kernel); a failure (a kernel without transparent huge pages)
/// leaves the buffer as it was.
pub(crate) fn advise_huge_pages<T>(buffer: &Vec<T>) {
    // At most `isize::MAX` bytes: a `Vec` never allocates more.
    let bytes = buffer.capacity() * size_of::<T>();
    if bytes < HUGE_PAGES_FROM {
        return;
    }
    let start = buffer.as_ptr() as usize;
    let (from, to) = (
        start.next_multiple_of(HUGE_PAGE),
        (start + bytes) / HUGE_PAGE * HUGE_PAGE,
    );
    if from < to {
        advise(from, to - from);
    }
}

#[cfg(target_os = "linux")]
fn advise(from: usize, bytes: usize) {
    // SAFETY: `[from, from + bytes)` lies inside one allocation this buffer owns, and starts
    // and ends on page boundaries. `MADV_HUGEPAGE` changes only how the kernel may back these
    // pages (their contents and addresses stay), so no memory anyone else can reach changes;
    // the call's result is advice too, and an error changes nothing.
    unsafe {
        libc::madvise(from as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_from: usize, _bytes: usize) {}

/// The bytes of the third-level cache the first CPU shares, as Linux reports it
/// (`/sys/devices/system/cpu/cpu0/cache/index3/size`, e.g. `32768K`, where that entry's
/// `level` reads 3), read once; `None` elsewhere, or where the files are missing, unreadable
/// or describe another level.
pub(crate) fn shared_cache_bytes() -> Option<usize> {
    static BYTES: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let read = |name: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index3/{name}"))
                .ok()
        };
        let third = read("level").is_some_and(|level| level.trim() == "3");
        read("size")
            .filter(|_| third)
            .and_then(|text| cache_size(&text))
    })
}

/// A cache size as Linux writes it: a number of bytes, or of `K`, `M` or `G` bytes.
fn cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'K') => (&text[..at], 1 << 10),
        (at, 'M') => (&text[..at], 1 << 20),
        (at, 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod cache_tests {
    use super::cache_size;

    #[test]
    fn cache_sizes_read_as_linux_writes_them() {
        assert_eq!(cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(cache_size("8M"), Some(8 << 20));
        assert_eq!(cache_size("1G"), Some(1 << 30));
        assert_eq!(cache_size("512"), Some(512));
        for bad in [
            "",
            "K",
            "12Q",
            "-4K",
            "99999999999999999999G",
            "18446744073709551615K",
        ] {
            assert_eq!(cache_size(bad), None, "{bad:?}");
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{zeroed, FILLED_BELOW};
    use crate::Tensor;

    #[test]
    fn buffers_are_zeros_on_both_sides_of_the_fill_threshold() {
        let below = FILLED_BELOW / size_of::<f64>();
        for count in [0, 1, 7, below - 1, below, 100_000] {
            let data = zeroed::<f64>(count);
            assert_eq!(data.len(), count);
            assert!(data.iter().all(|&x| x.to_bits() == 0), "{count} elements");
        }
        // Complex zeros are two parts each.
        let complex = zeroed::<num_complex::Complex<f32>>(5);
        assert!(complex.iter().all(|z| z.re == 0.0 && z.im == 0.0));
    }

    /// The `VmFlags` of the mapping of this process that holds `address`.
    fn flags_at(address: usize) -> String {
        let maps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
        let mut inside = false;
        for line in maps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((low, high)) = range.split_once('-') {
                if let (Ok(low), Ok(high)) = (
                    usize::from_str_radix(low, 16),
                    usize::from_str_radix(high, 16),
                ) {
                    inside = low <= address && address < high;
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.to_string();
                }
            }
        }
        panic!("no mapping holds {address:#x}");
    }

    #[test]
    fn large_tensors_ask_for_huge_pages_and_keep_their_elements() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            return; // A kernel built without them: the advice is refused, nothing to check.
        }
        // 36 MiB of f32 (72 of f64): past the largest size glibc serves from its heap (32 MiB),
        // so each buffer is a mapping of its own, which no earlier advice can have marked.
        let n = 9 << 20;
        let zeros = Tensor::<f32>::zeros([n]);
        let counted = Tensor::<f32>::from_fn([n], |ix| ix[0] as f32);
        let full = Tensor::<f64>::full([n], 0.5);
        for (what, address, bytes) in [
            ("zeros", zeros.as_slice().as_ptr() as usize, 4 * n),
            ("from_fn", counted.as_slice().as_ptr() as usize, 4 * n),
            ("full", full.as_slice().as_ptr() as usize, 8 * n),
        ] {
            // The middle byte lies in a whole advised 2 MiB page.
            let flags = flags_at(address + bytes / 2);
            assert!(
                flags.split_whitespace().any(|flag| flag == "hg"),
                "{what}: no huge-page advice in `{flags}`"
            );
        }
        assert!(zeros.as_slice().iter().all(|&x| x == 0.0));
        assert!(counted
            .as_slice()
            .iter()
            .enumerate()
            .all(|(i, &x)| x == i as f32));
        assert!(full.as_slice().iter().all(|&x| x == 0.5));
    }
}
