"""l40sbench: honest fine-tuning and inference timings for image models."""

__version__ = "0.1.0"
