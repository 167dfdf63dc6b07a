"""privateshared.bench"""
