"""Keras transfer-learning classification benchmark."""
