"""A ``FairseqDataset`` base for datasets with one length per item (``self.sizes``) and a
``self.shuffle`` flag: fairseq's size, token count and length-sorted order from them."""
import numpy as np
from fairseq.data import FairseqDataset


class LengthSortedDataset(FairseqDataset):
    """Subclasses set ``self.sizes`` (int array, one length per item) and ``self.shuffle``."""

    def size(self, index):
        return int(self.sizes[index])

    def num_tokens(self, index):
        return int(self.sizes[index])

    def ordered_indices(self):
        """Shortest first; equal lengths in random order when shuffling (stable sort of a permutation)."""
        order = np.random.permutation(len(self)) if self.shuffle else np.arange(len(self))
        return order[np.argsort(self.sizes[order], kind="mergesort")]
