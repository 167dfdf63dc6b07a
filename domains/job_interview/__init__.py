"""Job interview: an applicant tells a recruiter about their education, experience and start."""
