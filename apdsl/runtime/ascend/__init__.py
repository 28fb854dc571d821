"""The Ascend instructions: the DMA rules and tile copies, `mmad`."""
